#!/usr/bin/env python3
"""Writes scenarios/user-models/: a user's own model and data, as docs/your-own-bug.md
describes them. Two models a user could bring:
  classifier.pt   a small classifier written here in plain PyTorch (Linear, LayerNorm, tanh),
                  compiled with torch.jit.script;
  gpt2-tiny.pt    a Hugging Face GPT-2 built from a GPT2Config (one layer, no weights downloaded),
                  traced with torch.jit.trace, the logits returned;
and their samples as safetensors files (classifier-samples: features and class ids;
gpt2-samples: token ids right-padded, labels -100 at padding, an attention mask), then scenarios
that train them correctly and with the classic mistakes.

Needs the torch venv's python and transformers (tests/user_models/install_transformers.sh):
  PYTHONPATH=$(tests/user_models/install_transformers.sh) \\
      ~/.cache/trainrepro/torch-2.11.0-venv/bin/python scenarios/user-models/generate.py
then `build/trainrepro golden --update scenarios/user-models`. The model files are written once
and kept (TorchScript archives are not byte-reproducible, and each golden is keyed by its file's
digest); pass --models to write them again."""
import argparse
import functools
import pathlib
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
FEATURES, CLASSES, HIDDEN = 10, 5, 24
VOCAB, LENGTH = 40, 12


class Classifier(torch.nn.Module):
    """Not the zoo's MLP: a LayerNorm between the layers and tanh."""

    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(FEATURES, HIDDEN)
        self.norm = torch.nn.LayerNorm(HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.norm(self.encoder(inputs))))


class Gpt2Logits(torch.nn.Module):
    """Returns the logits alone (a traced GPT2LMHeadModel returns a tuple; trainrepro also takes
    the tuple and uses its first element)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False)[0]


def write_models():
    torch.manual_seed(1)
    torch.jit.script(Classifier()).save(str(HERE / "classifier.pt"))
    from transformers import GPT2Config, GPT2LMHeadModel
    # Dropout off: the run and its golden must compute the same function.
    config = GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=32, n_layer=1, n_head=4,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(2)
    model = Gpt2Logits(GPT2LMHeadModel(config)).train()
    example = torch.randint(1, VOCAB, (2, LENGTH))
    torch.jit.trace(model, (example,), check_trace=False).save(str(HERE / "gpt2-tiny.pt"))


def write_samples():
    generator = torch.Generator().manual_seed(3)
    inputs = torch.randn(96, FEATURES, generator=generator)
    teacher = torch.randn(CLASSES, FEATURES, generator=generator)
    save_file({"inputs": inputs, "targets": (inputs @ teacher.T).argmax(dim=1)},
              str(HERE / "classifier-samples.safetensors"))
    lengths = torch.randint(3, LENGTH + 1, (64,), generator=generator)
    tokens = torch.randint(1, VOCAB, (64, LENGTH), generator=generator)
    positions = torch.arange(LENGTH)
    attention_mask = (positions < lengths[:, None]).to(torch.int64)
    input_ids = tokens.masked_fill(attention_mask == 0, 0)
    # The next token of each position; -100 where there is none (padding, the last real token).
    labels = torch.cat([input_ids[:, 1:], torch.zeros(64, 1, dtype=torch.int64)], dim=1)
    labels = labels.masked_fill(positions >= (lengths[:, None] - 1), -100)
    save_file({"inputs": input_ids, "targets": labels, "attention_mask": attention_mask},
              str(HERE / "gpt2-samples.safetensors"))


ADAMW = {"type": "AdamW", "params": {"lr": 0.002, "weight_decay": 0.01}}
CLASSIFIER = {"name": "torchscript", "options": {"file": "classifier.pt"}}
CLASSIFIER_DATA = {"name": "safetensors", "options": {"file": "classifier-samples.safetensors"}}
GPT2 = {"name": "torchscript", "options": {"file": "gpt2-tiny.pt"}}
GPT2_DATA = {"name": "safetensors", "options": {"file": "gpt2-samples.safetensors"}}
PASS = {"outcome": "pass"}


def diagnosis(name):
    return {"outcome": "diagnosis", "diagnosis": name}


write = functools.partial(scenario_file.write, HERE, "user-models", model=CLASSIFIER,
                          data=CLASSIFIER_DATA, dtype="float32")


def write_scenarios():
    write("user-classifier-gas4",
          "Your own scripted classifier on your own samples, 4 micro-batches of 4 accumulated: "
          "every step's gradients are the golden's batch of 16.",
          PASS, golden={"train_batch_size": 16, "steps": 4},
          deepspeed={"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
                     "optimizer": ADAMW})
    write("user-classifier-gas-missing",
          "The same model and samples with only train_micro_batch_size_per_gpu in the config: "
          "DeepSpeed accumulates nothing, so each step sees 4 samples, not the intended 16.",
          diagnosis("no_accumulation"), golden={"train_batch_size": 16, "steps": 3},
          deepspeed={"train_micro_batch_size_per_gpu": 4, "optimizer": ADAMW}, dtype="float64")
    write("user-classifier-zero2-2ranks",
          "Your own classifier at ZeRO stage 2 on 2 ranks, 2 micro-batches of 4 each: the "
          "partitioned gradients and optimizer state give the golden's batch of 16.",
          PASS, golden={"train_batch_size": 16, "steps": 3}, world=2,
          deepspeed={"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
                     "zero_optimization": {"stage": 2}, "optimizer": ADAMW})
    write("user-classifier-keeps-loss",
          "The loop appends every micro-batch's loss tensor to a list: your model's autograd "
          "graph stays alive step after step.",
          diagnosis("host_memory_leak"), golden={"train_batch_size": 8, "steps": 2},
          loop={"steps": 40, "keep": "loss_with_graph"},
          deepspeed={"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
                     "optimizer": ADAMW})
    write("user-classifier-keeps-loss-item",
          "The fix: the loop keeps loss.item(), a float; memory stays flat over 40 steps.",
          PASS, golden={"train_batch_size": 8, "steps": 2},
          loop={"steps": 40, "keep": "loss_item"},
          deepspeed={"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
                     "optimizer": ADAMW})
    write("user-gpt2-tokens",
          "A Hugging Face GPT-2 (traced from a config) on your padded token samples, labels -100 "
          "at padding, 4 micro-batches of 4: the token loss over the whole window matches the "
          "golden's batch of 16.",
          PASS, model=GPT2, data=GPT2_DATA, golden={"train_batch_size": 16, "steps": 3},
          deepspeed={"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
                     "optimizer": ADAMW})
    write("user-gpt2-per-micro-batch-tokens",
          "The same GPT-2 with each micro-batch's loss averaged over its own tokens (the "
          "Trainer before transformers 4.46): short micro-batches weigh more than in the golden.",
          # float32: the traced graph casts the position embeddings to float32 (the dtype it was
          # traced with), so a float64 run would be only as exact as float32 there (a warning).
          diagnosis("per_micro_batch_token_normalisation"), model=GPT2, data=GPT2_DATA,
          golden={"train_batch_size": 16, "steps": 3},
          loop={"token_normalisation": "per_micro_batch"},
          deepspeed={"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
                     "optimizer": ADAMW})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", action="store_true", help="write the model files again")
    args = parser.parse_args()
    if args.models or not (HERE / "classifier.pt").exists() or not (HERE / "gpt2-tiny.pt").exists():
        write_models()
    write_samples()
    write_scenarios()


if __name__ == "__main__":
    main()
