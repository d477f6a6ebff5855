#!/usr/bin/env python3
"""Writes scenarios/client-optimizer/ as a user would: public configs whose script passes its own
optimizer to deepspeed.initialize (Megatron-DeepSpeed's and DeepSpeed's Megatron GPT-2 tests, no
"optimizer" block), each through `trainrepro new --client-optimizer … --param-groups …` with
Megatron's optimizer (torch AdamW, lr 3e-4, weight decay 0.1, betas 0.9/0.95) and its no-decay
groups (biases; the built-in MLP has no LayerNorm), then named, described and given the
expectation DeepSpeed's sources say. The configs are tests/ds-config-corpus/configs/ (sources in
its sources.json). Re-run after changing them, then
`build/trainrepro golden --update scenarios/client-optimizer`.

    scenarios/client-optimizer/generate.py [TRAINREPRO]   (default build/trainrepro)
"""
import json
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = ROOT / "tests" / "ds-config-corpus" / "configs"
MEGATRON_ADAMW = "AdamW lr=3e-4 weight_decay=0.1 betas=0.9,0.95"
NO_DECAY = "no_decay=bias"

SCENARIOS = [
    ("megatron-universal-ckpt-client-adamw-no-decay-bf16-zero1",
     "megatron-deepspeed-universal-checkpointing.json", [],
     "Megatron-DeepSpeed's universal-checkpointing config (bf16, ZeRO 1, fp32 gradient "
     "accumulation, no optimizer block) with the optimizer Megatron passes to "
     "deepspeed.initialize (torch AdamW) and its no-decay group for biases: trains and matches.",
     ["regression-test"], {"outcome": "pass"}),
    ("megatron-gpt2-warmuplr-client-adamw-no-decay-fp16-zero2",
     "deepspeed-test-megatron-gpt2-scheduler-warmuplr.json", [],
     "DeepSpeed's Megatron GPT-2 WarmupLR test config (fp16 dynamic loss scaling, ZeRO 2) with "
     "Megatron's client AdamW and no-decay group: DeepSpeed's WarmupLR writes its rate into both "
     "param groups; trains and matches.",
     ["regression-test", "scheduler"], {"outcome": "pass"}),
    ("megatron-gpt2-no-zero-client-adamw-stepped-at-init",
     "deepspeed-test-megatron-gpt2-bs8-no-zero.json", [],
     "DeepSpeed's Megatron GPT-2 bs8 test config (fp16, ZeRO stage 0) with Megatron's client "
     "AdamW: FP16_Optimizer wraps the client optimizer too and steps it once with zero gradients "
     "at initialization (runtime/fp16/fused_optimizer.py initialize_optimizer_states), so every "
     "update differs from the golden's.",
     ["reproduction"], {"outcome": "diagnosis", "diagnosis": "optimizer_stepped_at_initialization"}),
    ("megatron-zero3-infinity-typo-refused-with-client-optimizer",
     "dsexamples-megatron-zero3-infinity-nvme-static-loss-scale.json", ["--intended-batch", "4"],
     "DeepSpeedExamples' Megatron ZeRO-Infinity config with Megatron's client AdamW: DeepSpeed "
     "0.19.8 refuses it before any optimizer is built, for its misspelt "
     "stage3_param_persitence_threshold (pydantic's extra_forbidden).",
     ["reproduction", "config-error"], {"outcome": "config_error", "error": "unknown_section_key"}),
]


def main():
    trainrepro = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "trainrepro")
    for name, config, extra, description, tags, expect in SCENARIOS:
        path = HERE / f"{name}.json"
        subprocess.run([trainrepro, "new", "--ds-config", str(CORPUS / config), "-o", str(path),
                        "--client-optimizer", MEGATRON_ADAMW, "--param-groups", NO_DECAY,
                        "--no-golden", "--force"] + extra,
                       check=True, capture_output=True, text=True)
        body = json.loads(path.read_text())
        body["description"] = description
        body["tags"] = tags + ["client-optimizer", "public-config"]
        body["expect"] = expect
        scenario_file.write_body(HERE, body)


if __name__ == "__main__":
    main()
