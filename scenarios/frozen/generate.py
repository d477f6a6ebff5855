#!/usr/bin/env python3
"""Writes scenarios/frozen/: parameters the user froze (requires_grad_(False), as PEFT and
fine-tuning scripts do; the model key "frozen"). Frozen parameters get no gradient and no optimizer
state and never move, in the run and in its golden; ZeRO stages 1-2 leave them out of the flat
partitions, stage 3 partitions and gathers them too. With frozen embeddings, a reentrant
checkpoint of every GPT block reproduces the classic PEFT misuse (no block trains), with its
non-reentrant twin. Re-run after changing them, then
`build/trainrepro golden --update scenarios/frozen`."""
import functools
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
MLP = {"name": "mlp", "options": {"dims": [10, 20, 20, 4], "activation": "tanh"}, "seed": 41}
MLP_DATA = {"name": "classification", "options": {"features": 10, "classes": 4}, "seed": 42}
GPT = {"name": "gpt",
       "options": {"vocab_size": 40, "max_seq_len": 24, "d_model": 24, "heads": 3, "layers": 3},
       "seed": 43}
TOKENS = {"name": "token_sequences",
          "options": {"vocab_size": 40, "min_length": 8, "max_length": 24}, "seed": 44}
# Weight decay on: an optimizer handed a frozen parameter would still decay it.
ADAMW = {"type": "AdamW", "params": {"lr": 0.003, "weight_decay": 0.05}}
EMBEDDINGS = ["token_embedding", "position_embedding"]
PASS = {"outcome": "pass"}


def frozen(model, names):
    return {**model, "frozen": names}


write = functools.partial(scenario_file.write, HERE, "frozen", dtype="float64")


def config(train_batch_size, micro, stage, **rest):
    return {"train_batch_size": train_batch_size, "train_micro_batch_size_per_gpu": micro,
            "optimizer": ADAMW, "zero_optimization": {"stage": stage}, **rest}


write("mlp-frozen-first-layer",
      "layers.0 frozen (requires_grad_(False)) on one rank, GAS 3: it keeps its initial weights "
      "under AdamW's weight decay, and the other layers' gradients equal the golden's.",
      PASS, model=frozen(MLP, ["layers.0"]), data=MLP_DATA, deepspeed=config(18, 6, 0),
      golden={"train_batch_size": 18, "steps": 3})
write("mlp-frozen-first-layer-zero1-3ranks",
      "layers.0 frozen at ZeRO stage 1 on 3 ranks: the flat partition holds only the trainable "
      "layers (padded to 3), the frozen weights stay whole on every rank.",
      PASS, model=frozen(MLP, ["layers.0"]), data=MLP_DATA, world=3,
      deepspeed=config(24, 4, 1), golden={"train_batch_size": 24, "steps": 3})
write("mlp-frozen-middle-layer-zero2-2ranks",
      "A frozen middle layer at ZeRO stage 2 on 2 ranks, GAS 2: gradients flow through it to "
      "layers.0, and it is neither reduced nor gathered.",
      PASS, model=frozen(MLP, ["layers.1"]), data=MLP_DATA, world=2,
      deepspeed=config(24, 6, 2), golden={"train_batch_size": 24, "steps": 3})
write("mlp-frozen-middle-layer-zero3-2ranks",
      "A frozen middle layer at ZeRO stage 3 on 2 ranks: it is partitioned like every parameter "
      "and gathered for its forward and, since its output carries history, for its backward.",
      PASS, model=frozen(MLP, ["layers.1"]), data=MLP_DATA, world=2,
      deepspeed=config(24, 6, 3), golden={"train_batch_size": 24, "steps": 3})
write("gpt-frozen-embeddings-zero3-2ranks",
      "Frozen token and position embeddings at ZeRO stage 3 on 2 ranks, GAS 2, float32: they are "
      "gathered for the forward only (their outputs carry no history, so no backward needs them).",
      PASS, model=frozen(GPT, EMBEDDINGS), data=TOKENS, world=2, dtype="float32",
      deepspeed=config(16, 4, 3), golden={"train_batch_size": 16, "steps": 2})
write("gpt-frozen-blocks-bf16-zero2",
      "A fine-tune of the head alone: every transformer block and the embeddings frozen, bf16 at "
      "ZeRO stage 2, judged against its precision twin.",
      PASS, model=frozen(GPT, EMBEDDINGS + ["blocks"]), data=TOKENS, dtype="float32",
      deepspeed=config(16, 8, 2, bf16={"enabled": True}),
      golden={"train_batch_size": 16, "steps": 3})
write("gpt-frozen-embeddings-reentrant-checkpoint-blocks-never-train",
      "The PEFT misuse: embeddings frozen and every block in deepspeed.checkpointing.checkpoint "
      "(reentrant). The blocks' input no longer requires grad, so no checkpoint records a "
      "backward: only ln_f and the head train, silently (torch warns \"None of the inputs have "
      "requires_grad=True\"). Fix: non_reentrant_checkpoint, or model.enable_input_require_grads().",
      {"outcome": "diagnosis", "diagnosis": "reentrant_checkpoint_without_input_grad"},
      model=frozen(GPT, EMBEDDINGS), data=TOKENS, deepspeed=config(16, 8, 0),
      golden={"train_batch_size": 16, "steps": 3}, loop={"activation_checkpointing": "reentrant"})
write("gpt-frozen-embeddings-non-reentrant-checkpoint",
      "The twin: the same frozen embeddings with non_reentrant_checkpoint (use_reentrant=False): "
      "every block gets the golden's gradients.",
      PASS, model=frozen(GPT, EMBEDDINGS), data=TOKENS, deepspeed=config(16, 8, 0),
      golden={"train_batch_size": 16, "steps": 3},
      loop={"activation_checkpointing": "non_reentrant"})
