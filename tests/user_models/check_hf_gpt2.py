#!/usr/bin/env python3
"""A Hugging Face GPT-2 as a user brings it: built here from a GPT2Config (two layers, no weights
downloaded), traced with torch.jit.trace (the tuple a traced GPT2LMHeadModel returns, logits
first, taken as it is), with padded token samples whose labels are -100 at padding. Through
`trainrepro new` and `run`: whole-batch token normalisation passes at ZeRO 0 and at ZeRO 1 on
2 ranks; per-micro-batch normalisation (the Trainer before 4.46) is diagnosed by name.

Usage: PYTHONPATH=$(tests/user_models/install_transformers.sh) python check_hf_gpt2.py TRAINREPRO
"""
import json
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from safetensors.torch import save_file

from cli_checks import check, summary, trainrepro  # noqa: E402

try:
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError:
    print("skipped: no transformers on PYTHONPATH (tests/user_models/install_transformers.sh)")
    sys.exit(77)

VOCAB, LENGTH = 30, 10


def write_files(folder):
    config = GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=24, n_layer=2, n_head=3,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, torchscript=True)
    torch.manual_seed(11)
    model = GPT2LMHeadModel(config).train()
    example = torch.randint(1, VOCAB, (3, LENGTH))
    # A module wrapper is what torch.jit.trace keeps parameters of; the tuple stays a tuple.
    class Tupled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt2 = model

        def forward(self, input_ids):
            return self.gpt2(input_ids=input_ids, use_cache=False)

    traced = torch.jit.trace(Tupled(), (example,), check_trace=False, strict=False)
    traced.save(str(folder / "gpt2.pt"))
    generator = torch.Generator().manual_seed(12)
    lengths = torch.randint(2, LENGTH + 1, (48,), generator=generator)
    positions = torch.arange(LENGTH)
    attention = (positions < lengths[:, None]).long()
    ids = torch.randint(1, VOCAB, (48, LENGTH), generator=generator).masked_fill(attention == 0, 0)
    labels = torch.cat([ids[:, 1:], torch.zeros(48, 1, dtype=torch.long)], dim=1)
    labels = labels.masked_fill(positions >= lengths[:, None] - 1, -100)
    save_file({"inputs": ids, "targets": labels, "attention_mask": attention},
              str(folder / "tokens.safetensors"))
    adamw = {"type": "AdamW", "params": {"lr": 0.003}}
    (folder / "gas4.json").write_text(json.dumps(
        {"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 4,
         "optimizer": adamw}))
    (folder / "zero1.json").write_text(json.dumps(
        {"train_batch_size": 12, "train_micro_batch_size_per_gpu": 3,
         "zero_optimization": {"stage": 1}, "optimizer": adamw}))


def main():
    with tempfile.TemporaryDirectory() as temporary:
        folder = pathlib.Path(temporary)
        write_files(folder)
        mine = ["--model", "gpt2.pt", "--data", "tokens.safetensors"]
        status, out = trainrepro("new", "--ds-config", "gas4.json", *mine, "-o", "whole.json",
                                 cwd=folder)
        check(status == 0 and "trains with train_batch_size 12" in out, "new: GPT-2, GAS 4", out)
        status, out = trainrepro("run", "whole.json", cwd=folder)
        check(status == 0, "run: whole-batch token normalisation passes on GPT-2", out)
        status, out = trainrepro("new", "--ds-config", "gas4.json", *mine, "--habit",
                                 "token_normalisation=per_micro_batch", "-o", "per-micro.json",
                                 cwd=folder)
        check(status == 0, "new: the per-micro-batch habit", out)
        status, out = trainrepro("run", "per-micro.json", cwd=folder)
        check(status == 1 and "per_micro_batch_token_normalisation" in out
              and "(matched" in out, "run: per-micro-batch normalisation diagnosed on GPT-2", out)
        status, out = trainrepro("new", "--ds-config", "zero1.json", *mine, "--world-size", 2,
                                 "-o", "zero1.json.s", "--name", "zero1", cwd=folder)
        check(status == 0, "new: ZeRO 1 on 2 ranks", out)
        status, out = trainrepro("run", "zero1.json.s", cwd=folder)
        check(status == 0 and "ZeRO stage 1, 2 rank(s)" in out,
              "run: GPT-2 (tied embedding and head) at ZeRO 1 on 2 ranks passes", out)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
