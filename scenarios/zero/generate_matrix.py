#!/usr/bin/env python3
"""Writes the ZeRO matrix scenarios (scenarios/zero/matrix-*.json): every stage in 0..3 x world
size 1, 2, 4 x GAS 1, 4 x SGD (momentum) / AdamW (with clipping) on an MLP, all against the
golden of one unaccumulated batch of 32 (run in CI: ~40 s for all 48 on 2 cores), and the GPT
decoder on variable-length token sequences at stages 1-3 on 4 ranks, tagged `nightly` (excluded
from scripts/test; run them with `TRAINREPRO_NIGHTLY=1 scripts/test -L zero-matrix` or
`scripts/run`). Re-run after changing the matrix, then `build/trainrepro golden --update
scenarios/zero`."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
TRAIN_BATCH = 32
# 15 -> 29 -> 5: 614 elements, not a multiple of 4, and odd-sized weights, so flat (stages 1-2)
# and per-parameter (stage 3) partitions both need padding at world sizes 2 and 4.
MODEL = {"name": "mlp", "options": {"dims": [15, 29, 5], "activation": "tanh"}, "seed": 71}
DATA = {"name": "classification", "options": {"features": 15, "classes": 5}, "seed": 72}
# Clipping is stated for both: DeepSpeed 0.19.3+ clips at 1.0 when the config says nothing.
OPTIMIZERS = {
    "sgd": ({"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}, 0.0),
    "adamw": ({"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}}, 0.5),
}
GPT_MODEL = {
    "name": "gpt",
    "options": {"vocab_size": 40, "max_seq_len": 16, "d_model": 24, "heads": 2, "layers": 2},
    "seed": 73,
}
GPT_DATA = {
    "name": "token_sequences",
    "options": {"vocab_size": 40, "min_length": 3, "max_length": 16},
    "seed": 74,
}


def scenario(stage, world, gas, opt, gpt=False):
    optimizer, clipping = OPTIMIZERS[opt]
    if gpt:
        # At lr 0.01 Adam's sign-like steps on near-zero gradients turn float32 rounding into
        # parameter differences of ~lr, and the next step's gradients then leave fp32
        # tolerance on every stage alike; 0.001 keeps the comparison meaningful.
        optimizer = {"type": "AdamW", "params": {"lr": 0.001, "weight_decay": 0.01}}
    micro = TRAIN_BATCH // (world * gas)
    deepspeed = {
        "train_batch_size": TRAIN_BATCH,
        "train_micro_batch_size_per_gpu": micro,
        "gradient_accumulation_steps": gas,
        "zero_optimization": {"stage": stage},
        "optimizer": optimizer,
    }
    deepspeed["gradient_clipping"] = clipping
    if stage >= 1 and opt == "sgd":
        # DeepSpeed refuses torch.optim.SGD under ZeRO unless told it may (runtime/engine.py).
        deepspeed["zero_allow_untested_optimizer"] = True
    tags = ["regression-test", "zero-matrix"] + (["multi-rank"] if world > 1 else [])
    if gpt:
        tags += ["tokens", "nightly"]
    return {
        "name": f"matrix-{'gpt-' if gpt else ''}stage{stage}-ws{world}-gas{gas}-{opt}",
        "description": (
            f"ZeRO stage {stage} on {world} rank(s), micro batch {micro} x GAS {gas} x {world} "
            f"= the golden's {TRAIN_BATCH}; {opt.upper()}"
            + (f" with clipping at {clipping}" if clipping else " without clipping")
            + ": gradients (gathered whole at each boundary) and parameters match the golden, "
            "model states and traffic match the ZeRO paper's formulas."
        ),
        "tags": tags,
        **({"requires": ["mpi"]} if world > 1 else {}),
        "model": GPT_MODEL if gpt else MODEL,
        "data": GPT_DATA if gpt else DATA,
        "deepspeed": deepspeed,
        "world_size": world,
        "dtype": "float32",
        "golden": {"train_batch_size": TRAIN_BATCH, "steps": 3},
        "expect": {"outcome": "pass"},
    }


def main():
    for old in HERE.glob("matrix-*.json"):
        old.unlink()
    for stage in range(4):
        for world in (1, 2, 4):
            for gas in (1, 4):
                for opt in OPTIMIZERS:
                    body = scenario(stage, world, gas, opt)
                    scenario_file.write_body(HERE, body)
    for stage in (1, 2, 3):
        body = scenario(stage, 4, 2, "adamw", gpt=True)
        scenario_file.write_body(HERE, body)


if __name__ == "__main__":
    main()
