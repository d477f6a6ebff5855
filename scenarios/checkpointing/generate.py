#!/usr/bin/env python3
"""Writes scenarios/checkpointing/: activation checkpointing as a user's model does it (the loop
key "activation_checkpointing"). Checkpointed blocks must give the golden's gradients (the golden
is computed without checkpointing) and lower the training's peak memory; a reentrant checkpoint
of a block whose input is the data reproduces the classic misuse (that block never trains), with
its non-reentrant twin. Re-run after changing them, then
`build/trainrepro golden --update scenarios/checkpointing`."""
import functools
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
MLP = {"name": "mlp", "options": {"dims": [12, 24, 24, 3], "activation": "gelu"}, "seed": 31}
MLP_DATA = {"name": "classification", "options": {"features": 12, "classes": 3}, "seed": 32}
# Long sequences and four blocks: the attention scores (N, H, S, S) dominate the activations, so
# checkpointing's saving shows against the parameters and optimizer state.
GPT = {"name": "gpt",
       "options": {"vocab_size": 48, "max_seq_len": 48, "d_model": 32, "heads": 4, "layers": 4},
       "seed": 33}
TOKENS = {"name": "token_sequences",
          "options": {"vocab_size": 48, "min_length": 24, "max_length": 48}, "seed": 34}
ADAMW = {"type": "AdamW", "params": {"lr": 0.002, "weight_decay": 0.01}}
# DeepSpeed's own section: it configures deepspeed.checkpointing.checkpoint for the model to call.
DS_SECTION = {"partition_activations": False, "contiguous_memory_optimization": False,
              "cpu_checkpointing": False, "number_checkpoints": None,
              "synchronize_checkpoint_boundary": False, "profile": False}


write = functools.partial(scenario_file.write, HERE, "checkpointing", model=MLP, data=MLP_DATA,
                          dtype="float64")


PASS = {"outcome": "pass"}


def mlp_config(**rest):
    return {"train_batch_size": 24, "train_micro_batch_size_per_gpu": 6, "optimizer": ADAMW,
            **rest}


def gpt_config(**rest):
    return {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8, "optimizer": ADAMW,
            "activation_checkpointing": DS_SECTION, **rest}


write("mlp-reentrant-checkpoint-first-block-never-trains",
      "Every MLP layer runs inside deepspeed.checkpointing.checkpoint (reentrant). The first "
      "block's input is the data, which does not require grad, so the checkpoint's output has no "
      "history: layers.0 gets no gradient and never trains, silently.",
      {"outcome": "diagnosis", "diagnosis": "reentrant_checkpoint_without_input_grad"},
      deepspeed=mlp_config(), golden={"train_batch_size": 24, "steps": 3},
      loop={"activation_checkpointing": "reentrant"})
write("mlp-non-reentrant-checkpoint",
      "The twin: the same blocks through non_reentrant_checkpoint (use_reentrant=False) get "
      "every gradient the golden has.",
      PASS, deepspeed=mlp_config(), golden={"train_batch_size": 24, "steps": 3},
      loop={"activation_checkpointing": "non_reentrant"})
write("mlp-reentrant-checkpoint-zero2-2ranks",
      "The misuse at ZeRO stage 2 on 2 ranks: the flat partitions hold zeros for layers.0, which "
      "still never learns.",
      {"outcome": "diagnosis", "diagnosis": "reentrant_checkpoint_without_input_grad"},
      deepspeed=mlp_config(train_batch_size=24, train_micro_batch_size_per_gpu=6,
                           zero_optimization={"stage": 2}),
      golden={"train_batch_size": 24, "steps": 3}, world=2,
      loop={"activation_checkpointing": "reentrant"})
write("mlp-non-reentrant-checkpoint-zero3-2ranks",
      "Non-reentrant checkpoints at ZeRO stage 3 on 2 ranks: each recomputation gathers its "
      "block's parameters again, and the gradients equal the golden's.",
      PASS, deepspeed=mlp_config(zero_optimization={"stage": 3}),
      golden={"train_batch_size": 24, "steps": 3}, world=2,
      loop={"activation_checkpointing": "non_reentrant"})

for mode in ("none", "reentrant", "non_reentrant"):
    spelled = mode.replace("_", "-")
    write(f"gpt-checkpoint-{spelled}",
          ("The GPT without checkpointing, the baseline of the peak-memory comparison: the config "
           "has DeepSpeed's activation_checkpointing section, which does nothing unless the model "
           "calls deepspeed.checkpointing.checkpoint (a warning says so)." if mode == "none" else
           f"Every GPT block checkpointed ({mode}): the blocks' input comes from the trainable "
           "embeddings, so even a reentrant checkpoint reaches every parameter; gradients equal "
           "the golden's and the training's peak memory is lower than without."),
          PASS, deepspeed=gpt_config(), model=GPT, data=TOKENS, dtype="float32",
          golden={"train_batch_size": 16, "steps": 3},
          loop=None if mode == "none" else {"activation_checkpointing": mode})
write("gpt-reentrant-checkpoint-zero3-2ranks",
      "Reentrant checkpoints of every GPT block at ZeRO stage 3 on 2 ranks, GAS 2.",
      PASS, deepspeed=gpt_config(train_micro_batch_size_per_gpu=4, zero_optimization={"stage": 3}),
      model=GPT, data=TOKENS,
      dtype="float32", golden={"train_batch_size": 16, "steps": 2}, world=2,
      loop={"activation_checkpointing": "reentrant"})
