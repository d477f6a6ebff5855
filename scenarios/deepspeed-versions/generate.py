#!/usr/bin/env python3
"""Writes the scenarios of scenarios/deepspeed-versions/: one behaviour that differs between the
DeepSpeed releases the harness knows (0.16.9 and 0.19.8; harness/scenario/deepspeed_release.h),
each shown under the release that has it and, where it makes sense, its twin under the other.
Re-run after changing them, then `build/trainrepro golden --update scenarios/deepspeed-versions`."""
import copy
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
BASE = {
    "model": {"name": "mlp", "options": {"dims": [12, 24, 3], "activation": "tanh"}, "seed": 31},
    "data": {"name": "classification", "options": {"features": 12, "classes": 3}, "seed": 32},
    "deepspeed": {
        "train_batch_size": 24,
        "train_micro_batch_size_per_gpu": 6,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}},
    },
    "device": "auto",
    "dtype": "float64",
    "golden": {"train_batch_size": 24, "steps": 3},
}

# Targets from a linear teacher: the squared error's gradient norm is several times 1 at every
# step, so a clipping threshold of 1.0 changes each update (classification's stays below 1).
CLIPPED_DATA = {"name": "regression", "options": {"features": 12, "outputs": 3, "noise": 0.1},
                "seed": 33}


def scenario(name, description, tags, expect, version=None, deepspeed=None, loop=None,
             remove=(), data=None):
    body = {"name": name, "description": description, "tags": tags}
    if version:
        body["deepspeed_version"] = version
    for key, value in copy.deepcopy(BASE).items():
        body[key] = value
    body["deepspeed"].update(deepspeed or {})
    if data:
        body["data"] = data
    for key in remove:
        body["deepspeed"].pop(key)
    if loop:
        body["loop"] = loop
    body["expect"] = expect
    return body


def diagnosis(name):
    return {"outcome": "diagnosis", "diagnosis": name}


def config_error(name):
    return {"outcome": "config_error", "error": name}


PASS = {"outcome": "pass"}
BF16_WITH_FP16_KEYS = {"enabled": False, "loss_scale": 0, "loss_scale_window": 1000,
                       "hysteresis": 2, "min_loss_scale": 1, "initial_scale_power": 16}
SCENARIOS = [
    scenario("direct-backward-refused-at-stage0-0.19",
             "DeepSpeed 0.19.8 hooks the outputs of engine(x): loss.backward() at ZeRO stage 0 "
             "raises 'Direct calls to tensor.backward() are not supported'.",
             ["reproduction", "deepspeed-version"], config_error("direct_backward_unsupported"),
             loop={"loss_scaling": "none"}),
    scenario("direct-backward-unscaled-at-stage0-0.16",
             "The same loop under DeepSpeed 0.16.9, which has no hooks: loss.backward() sums "
             "the micro-batch losses, gradients are GAS (4) times the golden's.",
             ["reproduction", "deepspeed-version"], diagnosis("loss_not_scaled"),
             version="0.16.9", loop={"loss_scaling": "none"}),
    scenario("direct-backward-scaled-at-stage2-0.19",
             "DeepSpeed 0.19.8 at ZeRO stage 2: loss.backward() after engine(x) is scaled by "
             "1/GAS by the engine's hooks, so the run matches the golden.",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"zero_optimization": {"stage": 2}}, loop={"loss_scaling": "none"}),
    scenario("unmanaged-accumulation-0.19",
             "managed_gradient_accumulation false (DeepSpeed 0.19.4+): every engine.step() is a "
             "boundary, so the optimizer steps after each micro-batch with 1/GAS of its gradient.",
             ["reproduction", "deepspeed-version"], diagnosis("unmanaged_gradient_accumulation"),
             deepspeed={"managed_gradient_accumulation": False}),
    scenario("unmanaged-accumulation-ignored-by-0.16",
             "The same config under DeepSpeed 0.16.9, which does not know the key: it accumulates "
             "as usual (a warning says the key is ignored).",
             ["regression-test", "deepspeed-version"], PASS, version="0.16.9",
             deepspeed={"managed_gradient_accumulation": False}),
    scenario("clipping-default-0.19",
             "No gradient_clipping in the config: DeepSpeed 0.19.8 clips at 1.0 (its default "
             "since 0.19.3), and so does the golden. Regression targets make every step's "
             "gradient norm larger than 1, so the clipping shows in the parameters.",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"optimizer": {"type": "SGD", "params": {"lr": 0.05}}},
             data=CLIPPED_DATA),
    scenario("clipping-default-0.16",
             "The same config under DeepSpeed 0.16.9: no clipping (its default 0.0). Trained by "
             "DeepSpeed 0.19.3 or later (`--engine deepspeed==0.19.8`), which clips at 1.0 by "
             "default, it fails and the diagnosis names the changed default.",
             ["regression-test", "deepspeed-version"], PASS, version="0.16.9",
             deepspeed={"optimizer": {"type": "SGD", "params": {"lr": 0.05}}},
             data=CLIPPED_DATA),
    scenario("optimizer-name-lowercase-sgd",
             "\"sgd\" is not one of DeepSpeed's own optimizer names (matched in any case) and "
             "torch.optim has no class \"sgd\": deepspeed.initialize refuses it.",
             ["reproduction", "deepspeed-version"], config_error("optimizer_not_supported"),
             deepspeed={"optimizer": {"type": "sgd", "params": {"lr": 0.1}}}),
    scenario("optimizer-name-uppercase-adamw",
             "\"ADAMW\" is DeepSpeed's own AdamW, matched in any case.",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"optimizer": {"type": "ADAMW",
                                      "params": {"lr": 0.01, "weight_decay": 0.01}}}),
    scenario("sgd-under-zero-without-allow-untested",
             "torch.optim.SGD at ZeRO stage 1 without zero_allow_untested_optimizer: "
             "deepspeed.initialize refuses an untested ZeRO optimizer.",
             ["reproduction", "deepspeed-version"], config_error("untested_zero_optimizer"),
             deepspeed={"zero_optimization": {"stage": 1},
                        "optimizer": {"type": "SGD", "params": {"lr": 0.1}}}),
    scenario("sgd-under-zero-with-allow-untested",
             "The same with zero_allow_untested_optimizer true: it trains and matches.",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"zero_optimization": {"stage": 1}, "zero_allow_untested_optimizer": True,
                        "optimizer": {"type": "SGD", "params": {"lr": 0.1}}}),
    scenario("removed-key-sparse-gradients-0.19",
             "DeepSpeed 0.19.8 refuses the removed 'sparse_gradients' key before anything else.",
             ["reproduction", "deepspeed-version"], config_error("removed_key"),
             deepspeed={"sparse_gradients": True}),
    scenario("removed-key-sparse-gradients-0.16",
             "DeepSpeed 0.16.9 still reads 'sparse_gradients' (a feature the reference engine "
             "does not implement; it changes nothing for dense gradients).",
             ["regression-test", "deepspeed-version"], PASS, version="0.16.9",
             deepspeed={"sparse_gradients": True}),
    scenario("zero-optimization-legacy-boolean",
             "\"zero_optimization\": true, the legacy form DeepSpeed still reads as stage 1.",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"zero_optimization": True}),
    scenario("torch-adam-default-weight-decay",
             "torch_adam: true builds torch.optim.AdamW, whose own default weight decay (0.01) "
             "applies when the config gives none; the golden uses it too.",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"optimizer": {"type": "Adam", "params": {"lr": 0.01, "torch_adam": True}}}),
    scenario("zero-key-typo-refused",
             "\"overlap_com\" for overlap_comm: DeepSpeedZeroConfig forbids keys it does not know "
             "(pydantic extra=\"forbid\"), so DeepSpeed refuses the config in every release.",
             ["reproduction", "deepspeed-version"], config_error("unknown_section_key"),
             deepspeed={"zero_optimization": {"stage": 1, "overlap_com": True}}),
    scenario("zero-key-typo-refused-0.16",
             "The same typo under DeepSpeed 0.16.9: its ZeRO schema forbids unknown keys too.",
             ["reproduction", "deepspeed-version"], config_error("unknown_section_key"),
             version="0.16.9",
             deepspeed={"zero_optimization": {"stage": 1, "overlap_com": True}}),
    scenario("offload-key-typo-refused",
             "A typo inside zero_optimization.offload_optimizer (\"pin_mem\"): refused by the "
             "nested schema as offload_optimizer.pin_mem.",
             ["reproduction", "deepspeed-version"], config_error("unknown_section_key"),
             deepspeed={"zero_optimization": {"stage": 1, "offload_optimizer":
                                              {"device": "none", "pin_mem": True}}}),
    scenario("zero-known-keys-accepted",
             "Every-day ZeRO keys, stage3_ aliases included, are accepted (and ignored by the "
             "reference engine with a warning): the run matches.",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"zero_optimization": {"stage": 1, "overlap_comm": True,
                                              "contiguous_gradients": True,
                                              "reduce_bucket_size": 500000000,
                                              "stage3_prefetch_bucket_size": 1000}}),
    scenario("fp16-key-typo-refused-0.19",
             "\"loss_scale_windw\" in fp16 (disabled): DeepSpeed 0.19.8 validates fp16 with a "
             "pydantic model and refuses the unknown key.",
             ["reproduction", "deepspeed-version"], config_error("unknown_section_key"),
             deepspeed={"fp16": {"enabled": False, "loss_scale_windw": 100}}),
    scenario("fp16-key-typo-ignored-by-0.16",
             "The same fp16 block under DeepSpeed 0.16.9, which reads fp16 with dict lookups and "
             "ignores the unknown key: it trains in float32 and matches.",
             ["regression-test", "deepspeed-version"], PASS, version="0.16.9",
             deepspeed={"fp16": {"enabled": False, "loss_scale_windw": 100}}),
    # fp16's loss-scaler keys pasted under bf16: pydantic lists all five, in the file's order
    # (checked against DeepSpeedConfig of the real 0.19.8 and 0.16.9).
    scenario("bf16-with-fp16-keys-refused-0.19",
             "fp16's loss-scaler keys pasted under bf16 (disabled): DeepSpeed 0.19.8's "
             "DeepSpeedBF16Config forbids them and lists all 5 validation errors in the file's "
             "order (loss_scale, loss_scale_window, hysteresis, min_loss_scale, "
             "initial_scale_power).",
             ["reproduction", "deepspeed-version"], config_error("unknown_section_key"),
             deepspeed={"bf16": BF16_WITH_FP16_KEYS}),
    scenario("bf16-with-fp16-keys-ignored-by-0.16",
             "The same bf16 block under DeepSpeed 0.16.9, which reads bf16 with dict lookups and "
             "ignores the keys: it trains in float32 and matches.",
             ["regression-test", "deepspeed-version"], PASS, version="0.16.9",
             deepspeed={"bf16": BF16_WITH_FP16_KEYS}),
    # runtime/lr_schedules.py: 0.16.9 warms up over max(2, warmup_num_steps) whatever the
    # number; 0.19.3+ refuses a value that is not a positive integer
    # (scenarios/schedulers/warmup-num-steps-zero-refused.json is the 0.19.8 twin).
    scenario("warmup-num-steps-zero-0.16",
             "WarmupLR with warmup_num_steps 0 under DeepSpeed 0.16.9: accepted and warmed up "
             "over max(2, 0) = 2 steps (0.19.8 refuses it: "
             "schedulers/warmup-num-steps-zero-refused.json); trains and matches.",
             ["regression-test", "deepspeed-version", "scheduler"], PASS, version="0.16.9",
             deepspeed={"scheduler": {"type": "WarmupLR",
                                      "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.01,
                                                 "warmup_num_steps": 0}}}),
    scenario("warmup-cosine-num-steps-negative-0.16",
             "WarmupCosineLR with warmup_num_steps -1 under DeepSpeed 0.16.9: max(2, -1) = 2 "
             "warm-up steps, then the cosine over total_num_steps 5; trains and matches.",
             ["regression-test", "deepspeed-version", "scheduler"], PASS, version="0.16.9",
             deepspeed={"scheduler": {"type": "WarmupCosineLR",
                                      "params": {"total_num_steps": 5,
                                                 "warmup_num_steps": -1}}}),
    scenario("warmup-cosine-num-steps-negative-refused-0.19",
             "The same WarmupCosineLR under DeepSpeed 0.19.8: ValueError: warmup_num_steps must "
             "be a positive integer, got -1.",
             ["reproduction", "deepspeed-version", "scheduler"], config_error("scheduler_invalid"),
             deepspeed={"scheduler": {"type": "WarmupCosineLR",
                                      "params": {"total_num_steps": 5,
                                                 "warmup_num_steps": -1}}}),
]

# The one every release of the sweep in docs/releases.md trains (0.14.0 on): a correct window
# whose verdict no release's defaults move (clipping set, SGD: no op for DeepSpeed to compile),
# in float32; its memory is memory/'s subject (a 22-step census costs minutes a release).
SCENARIOS.append(dict(
    scenario("sgd-gas4-trains-on-every-release",
             "A correct SGD window of GAS 4 with clipping set: every DeepSpeed release that runs "
             "here trains it as the golden does (the release sweep of docs/releases.md).",
             ["regression-test", "deepspeed-version"], PASS,
             deepspeed={"gradient_accumulation_steps": 4, "gradient_clipping": 1.0,
                        "optimizer": {"type": "SGD", "params": {"lr": 0.1}}},
             remove=("train_batch_size",)),
    dtype="float32",
    memory={"judge": False, "reason": "the sweep asks whether a release trains; memory is "
                                      "judged by scenarios/memory"}))


def main():
    for old in HERE.glob("*.json"):
        old.unlink()
    for body in SCENARIOS:
        scenario_file.write_body(HERE, body)


if __name__ == "__main__":
    main()
