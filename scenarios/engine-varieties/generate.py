#!/usr/bin/env python3
"""Writes scenarios/engine-varieties/: shapes the other folders lack, chosen to be run on both
engines (`build/trainrepro run` and `run --engine deepspeed==0.19.8`, through
tests/engine_deepspeed/compare_engines.py): odd GAS (5, 7), micro-batch 1, each batch key
DeepSpeed derives from the other two (or from train_batch_size alone), ZeRO-1/2 on 3 ranks with
accumulation, a clipping threshold that binds at every step, Adam with L2 decay through
torch_adam, WarmupDecayLR and OneCycle with accumulation under ZeRO, per-group lr and weight
decay at ZeRO-2 on 3 ranks, bf16 at ZeRO-2 on 3 ranks, and loop mistakes on several ranks.
Every scenario runs on DeepSpeed's CPU path (no fp16, Lamb, frozen parameters, loop clipping,
Trainer runs or gathered ZeRO-3 parameters, which the DeepSpeed engine skips).

Each expectation is derived from DeepSpeed 0.19.8 (line numbers in its installed sources):
  runtime/config.py 607-652 `_set_batch_related_parameters` (which batch key is derived, with
      floor division), 590-605 `_batch_assertion` (TB == MB * GAS * W);
  runtime/engine.py 3442-3463 `is_gradient_accumulation_boundary` ((micro_steps + 1) % GAS),
      2895-2900 `_scale_loss_by_gas` (engine.backward divides by GAS), 3505-3545
      `_take_model_step` (optimizer step, zero_grad, then lr_scheduler.step() when not skipped),
      2377-2382 and 2486-2493 (`Adam` + `adam_w_mode: false` + `torch_adam` -> torch.optim.Adam),
      1799-1810 and 2294-2311 (bf16 under ZeRO: grad_accum_dtype bf16 by default, the ZeRO
      optimizer);
  runtime/constants.py 203 GRADIENT_CLIPPING_DEFAULT = 1.0;
  runtime/zero/utils.py 45-47 ZERO_SUPPORTED_OPTIMIZERS (torch.optim.Adam; not torch.optim.SGD);
  runtime/zero/stage_1_and_2.py 3193-3216 `unscale_and_clip_grads` (one global clip coefficient
      over all ranks' partitions);
  runtime/lr_schedules.py 725-755 (WarmupLR sets warmup_min_lr at construction), 830-840
      (WarmupDecayLR's gamma), 560-578 and 679-696 (OneCycle writes (momentum, 0.99) into betas).
Re-run after changing them, then `build/trainrepro golden --update scenarios/engine-varieties`."""
import copy
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
# The sizes of scenarios/varieties: one DeepSpeed run takes seconds.
MLP = {"name": "mlp", "options": {"dims": [10, 20, 3], "activation": "tanh"}, "seed": 61}
MLP_DATA = {"name": "classification", "options": {"features": 10, "classes": 3}, "seed": 62}
GPT = {"name": "gpt",
       "options": {"vocab_size": 24, "max_seq_len": 14, "d_model": 12, "heads": 2, "layers": 1},
       "seed": 63}
TOKENS = {"name": "token_sequences",
          "options": {"vocab_size": 24, "min_length": 2, "max_length": 14}, "seed": 64}
ADAMW = {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}}
SGD_MOMENTUM = {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}


def scenario(name, description, expect, *, model=MLP, data=MLP_DATA, deepspeed, golden,
             world=1, dtype="float32", loop=None, parameter_groups=None, tags=()):
    body = {
        "name": name,
        "description": description,
        "tags": scenario_file.outcome_tags("engine-varieties", expect, world, tags),
        "model": model,
        "data": data,
        "deepspeed": {**deepspeed, "optimizer": deepspeed.get("optimizer", ADAMW)},
        "world_size": world,
        "dtype": dtype,
        "golden": golden,
        "expect": expect,
    }
    if world > 1:
        body["requires"] = ["mpi"]
    if loop:
        body["loop"] = loop
    if parameter_groups:
        body["parameter_groups"] = parameter_groups
    return body


def twin(bug, name, description, loop=None, deepspeed=None, dtype=None):
    """The bug's fixed twin: same model, data and golden; the fix applied."""
    body = copy.deepcopy(bug)
    if dtype:
        body["dtype"] = dtype
    body["name"] = name
    body["description"] = description
    body["tags"] = ["engine-varieties", "regression-test"] + [
        t for t in bug["tags"] if t not in ("engine-varieties", "reproduction")]
    body["expect"] = {"outcome": "pass"}
    if loop is not None:
        if loop:
            body["loop"] = loop
        else:
            body.pop("loop", None)
    if deepspeed is not None:
        body["deepspeed"] = {**deepspeed, "optimizer": bug["deepspeed"]["optimizer"]}
    return body


def diagnosis(name):
    return {"outcome": "diagnosis", "diagnosis": name}


PASS = {"outcome": "pass"}


def bodies():
    out = []

    # Batch keys: each one DeepSpeed derives (config.py 620-645), at odd GAS and odd world sizes.
    out.append(scenario(
        "tb-alone-zero2-3ranks",
        "train_batch_size 12 alone on 3 ranks at ZeRO stage 2: DeepSpeed sets GAS 1 and micro "
        "batch 12 // 3 = 4 (config.py _set_batch_related_parameters, the train_batch-only "
        "branch), 4 * 1 * 3 = 12 passes _batch_assertion, so each step averages the intended "
        "12 samples: pass.",
        PASS, deepspeed={"train_batch_size": 12, "zero_optimization": {"stage": 2}},
        golden={"train_batch_size": 12, "steps": 3}, world=3, tags=["zero", "batch-keys"]))
    out.append(scenario(
        "tb-gas7-derives-micro-zero1-2ranks",
        "train_batch_size 28 with gradient_accumulation_steps 7 on 2 ranks at ZeRO stage 1: "
        "DeepSpeed derives micro batch 28 // 2 // 7 = 2 (config.py, the train_batch + grad_acc "
        "branch); the boundary falls on every 7th micro-step ((micro_steps + 1) % 7 == 0) and "
        "engine.backward divides each loss by 7, so the window averages 28 samples: pass.",
        PASS, deepspeed={"train_batch_size": 28, "gradient_accumulation_steps": 7,
                         "zero_optimization": {"stage": 1}},
        golden={"train_batch_size": 28, "steps": 3}, world=2, tags=["zero", "batch-keys"]))
    out.append(scenario(
        "mb1-gas7-sgd-momentum-2ranks",
        "Micro batch 1, GAS 7 on 2 ranks at stage 0, SGD with momentum: DeepSpeed derives "
        "train_batch_size 1 * 7 * 2 = 14 (config.py, the micro_batch + grad_acc branch); seven "
        "single-sample backwards each divided by 7, then one all-reduce average across the two "
        "ranks, equal the mean over 14 samples: pass.",
        PASS, deepspeed={"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 7,
                         "optimizer": SGD_MOMENTUM},
        golden={"train_batch_size": 14, "steps": 3}, world=2, tags=["batch-keys"]))
    out.append(scenario(
        "tb-mb-gas5-zero2-3ranks",
        "train_batch_size 30 and micro batch 2 on 3 ranks at ZeRO stage 2: DeepSpeed derives "
        "GAS 30 // 2 // 3 = 5 (config.py, the train_batch + micro_batch branch); stage 2 "
        "reduce-scatters every micro-step's 1/5-scaled gradient into each rank's partition, "
        "which sums to the 30-sample mean at the 5th: pass.",
        PASS, deepspeed={"train_batch_size": 30, "train_micro_batch_size_per_gpu": 2,
                         "zero_optimization": {"stage": 2}},
        golden={"train_batch_size": 30, "steps": 3}, world=3, tags=["zero", "batch-keys"]))
    out.append(scenario(
        "tb-gas7-indivisible-3ranks",
        "train_batch_size 40 with gradient_accumulation_steps 7 on 3 ranks: DeepSpeed derives "
        "micro batch 40 // 3 // 7 = 1 by floor division and then asserts 40 == 1 * 7 * 3 "
        "(config.py _batch_assertion): it refuses the config, batch_size_mismatch.",
        {"outcome": "config_error", "error": "batch_size_mismatch"},
        deepspeed={"train_batch_size": 40, "gradient_accumulation_steps": 7},
        golden={"train_batch_size": 42, "steps": 2}, world=3, tags=["batch-keys",
                                                                    "config-error"]))

    # Clipping that binds at every step, on partitions: one global coefficient.
    out.append(scenario(
        "clip-0.05-sgd-zero1-2ranks-gas5",
        "gradient_clipping 0.05 (far below this MLP's gradient norm, so it clips every step) "
        "with SGD + momentum at ZeRO stage 1 on 2 ranks, micro batch 2, GAS 5 (TB 20 derived). "
        "SGD is not in ZERO_SUPPORTED_OPTIMIZERS, hence zero_allow_untested_optimizer. Stage 1 "
        "computes one norm over every rank's partition and scales all of them by "
        "0.05 / (norm + 1e-6) (stage_1_and_2.py unscale_and_clip_grads), as the golden clips "
        "the whole 20-sample gradient; SGD's update shows the coefficient directly: pass.",
        PASS, deepspeed={"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 5,
                         "gradient_clipping": 0.05, "zero_allow_untested_optimizer": True,
                         "zero_optimization": {"stage": 1}, "optimizer": SGD_MOMENTUM},
        golden={"train_batch_size": 20, "steps": 3}, world=2, tags=["zero", "clipping"]))

    # Adam with L2 decay through torch_adam, under ZeRO-1.
    out.append(scenario(
        "adam-l2-torch-adam-zero1-2ranks-gas3",
        "\"Adam\" with adam_w_mode false and torch_adam true builds torch.optim.Adam (engine.py "
        "get_optimizer_configuration), whose weight_decay 0.1 is L2 added to the gradient, not "
        "AdamW's decoupled decay; torch.optim.Adam is in ZERO_SUPPORTED_OPTIMIZERS, so ZeRO "
        "stage 1 on 2 ranks (micro batch 3, GAS 3, TB 18) accepts it and steps each partition "
        "with it: pass against a golden trained with the same L2 Adam.",
        PASS, deepspeed={"train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 3,
                         "zero_optimization": {"stage": 1},
                         "optimizer": {"type": "Adam", "params": {
                             "lr": 0.01, "weight_decay": 0.1, "adam_w_mode": False,
                             "torch_adam": True}}},
        golden={"train_batch_size": 18, "steps": 3}, world=2, tags=["zero", "optimizers"]))

    # Schedulers with accumulation under ZeRO.
    decay = {"type": "WarmupDecayLR",
             "params": {"warmup_min_lr": 0.002, "warmup_max_lr": 0.02, "warmup_num_steps": 2,
                        "warmup_type": "linear", "total_num_steps": 5}}
    bug = scenario(
        "warmup-decay-stepped-every-micro-step-zero1-2ranks-gas5",
        "WarmupDecayLR (linear warm-up 0.002 -> 0.02 over 2 steps, decay to 0 at step 5) at ZeRO "
        "stage 1 on 2 ranks, micro batch 2, GAS 5, and the loop also calls lr_scheduler.step() "
        "after every micro-batch: engine.step() steps the scheduler once per optimizer step "
        "(engine.py _take_model_step), so it advances 6 times per step and the decay arrives "
        "6x too early; the gradients match the golden, the rates do not: "
        "lr_scheduler_stepped_every_micro_step.",
        diagnosis("lr_scheduler_stepped_every_micro_step"),
        deepspeed={"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 5,
                   "zero_optimization": {"stage": 1}, "scheduler": decay},
        golden={"train_batch_size": 20, "steps": 4}, world=2,
        loop={"lr_scheduler_step": "every_micro_step"}, tags=["zero", "schedulers"])
    out.append(bug)
    out.append(twin(
        bug, "warmup-decay-adamw-zero1-2ranks-gas5",
        "The fix: only engine.step() steps WarmupDecayLR, once after each optimizer step "
        "(engine.py _take_model_step). The scheduler writes warmup_min_lr at construction "
        "(lr_schedules.py WarmupLR.__init__) and iteration 0's linear gamma is 0, so updates 0 "
        "and 1 use 0.002, update 2 uses 0.011 (gamma 1/2) and update 3 0.02 (decay gamma "
        "(5 - 2) / (5 - 2) = 1), the golden's schedule per optimizer step: pass.", loop={}))
    out.append(scenario(
        "one-cycle-adamw-zero2-2ranks-mb1-gas5",
        "OneCycle (0.001 -> 0.01 over 2 steps and back) with AdamW at ZeRO stage 2 on 2 ranks, "
        "micro batch 1, GAS 5 (TB 10 derived): the scheduler reaches the ZeRO optimizer's "
        "wrapped AdamW (lr_schedules.py get_torch_optimizer) and writes the rate and "
        "(momentum, 0.99) into its betas at construction and after each optimizer step "
        "(OneCycle._initialize_momentum, OneCycle.step), never per micro-step; the golden "
        "follows the same schedule per step: pass.",
        PASS, deepspeed={"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 5,
                         "zero_optimization": {"stage": 2},
                         "scheduler": {"type": "OneCycle", "params": {
                             "cycle_min_lr": 0.001, "cycle_max_lr": 0.01,
                             "cycle_first_step_size": 2}}},
        golden={"train_batch_size": 10, "steps": 4}, world=2, tags=["zero", "schedulers"]))

    # Parameter groups with their own lr and weight decay, ZeRO-2, 3 ranks.
    out.append(scenario(
        "gpt-groups-lr-and-decay-zero2-3ranks-gas5",
        "Three parameter groups on the GPT at ZeRO stage 2 on 3 ranks, micro batch 2, GAS 5 "
        "(TB 30 derived): the embeddings at lr 0.001 without decay, biases and LayerNorms at "
        "the optimizer's lr without decay, the rest at 0.01 with weight_decay 0.1. No scheduler "
        "overwrites the rates; stage 2 flattens, pads and partitions each group on its own and "
        "FusedAdam reads each group's lr and weight_decay: pass.",
        PASS, model=GPT, data=TOKENS,
        deepspeed={"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 5,
                   "zero_optimization": {"stage": 2},
                   "optimizer": {"type": "AdamW", "params": {"lr": 0.01,
                                                             "weight_decay": 0.1}}},
        parameter_groups=[
            {"params": ["token_embedding", "position_embedding"], "lr": 0.001,
             "weight_decay": 0.0},
            {"names_containing": ["bias", "ln"], "weight_decay": 0.0},
            {}],
        golden={"train_batch_size": 30, "steps": 3}, world=3,
        tags=["zero", "parameter-groups", "tokens"]))

    # bf16 at ZeRO-2 on 3 ranks.
    out.append(scenario(
        "bf16-zero2-3ranks-gas3",
        "bf16 at ZeRO stage 2 on 3 ranks, micro batch 2, GAS 3 (TB 18 derived), AdamW, no "
        "data_types: 0.19.8 accumulates in bf16 (engine.py get_data_types: grad_accum_dtype "
        "defaults to the model's dtype) inside the ZeRO optimizer (_do_optimizer_sanity_check "
        "returns ZERO_OPTIMIZATION), with fp32 master partitions; three micro-steps add only "
        "a few roundings, so the run stays within twice the bf16 precision twin's error: pass.",
        PASS, deepspeed={"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3,
                         "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}},
        golden={"train_batch_size": 18, "steps": 3}, world=3, tags=["zero", "precision"]))

    # Loop mistakes on several ranks.
    bug = scenario(
        "gas-missing-mb1-zero2-3ranks",
        "Micro batch 1 on 3 ranks at ZeRO stage 2, intended batch 15, gradient_accumulation_steps "
        "not set: DeepSpeed takes GAS 1 and train_batch_size 1 * 3 = 3 (config.py, the "
        "micro_batch-only branch), so every micro-step is a boundary and each optimizer step "
        "sees 3 samples, not 15: no_accumulation.",
        diagnosis("no_accumulation"),
        deepspeed={"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}},
        golden={"train_batch_size": 15, "steps": 3}, world=3, tags=["zero", "batch-keys"])
    out.append(bug)
    # Measured 2026-12-03 in float32: the reference engine failed this twin (step 2,
    # layers.1.weight[2,15]'s gradient at 101% of the float32 tolerance) and DeepSpeed 0.19.8
    # passed it (91%): both float32 round-off amplified by Adam. The golden's step-0 gradient of
    # layers.0.bias[15] is 2.6e-08, near Adam's eps 1e-08, so ~1e-09 of round-off moves that
    # parameter by ~1e-04 (inside the parameter allowance) and every later gradient with it, and
    # gradients are never loosened (docs/pitfalls.md). Hence float64, as varieties/ is:
    # the reference engine judges it exactly, DeepSpeed still trains in float32 (91%).
    out.append(twin(
        bug, "gas5-set-mb1-zero2-3ranks",
        "The fix: gradient_accumulation_steps 5 with micro batch 1 on 3 ranks gives "
        "train_batch_size 15 (config.py), one optimizer step per 5 micro-steps: pass.",
        deepspeed={"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 5,
                   "zero_optimization": {"stage": 2}}, dtype="float64"))
    bug = scenario(
        "loss-scaled-twice-zero1-3ranks-gas5",
        "ZeRO stage 1 on 3 ranks, train_batch_size 30 and micro batch 2 (GAS 5 derived): the "
        "loop divides the loss by 5 and engine.backward divides it by 5 again "
        "(engine.py _scale_loss_by_gas), so the reduced gradient is the golden's / 5: "
        "loss_scaled_twice.",
        diagnosis("loss_scaled_twice"),
        deepspeed={"train_batch_size": 30, "train_micro_batch_size_per_gpu": 2,
                   "zero_optimization": {"stage": 1}},
        golden={"train_batch_size": 30, "steps": 3}, world=3, loop={"loss_scaling": "twice"},
        tags=["zero"])
    out.append(bug)
    out.append(twin(
        bug, "loss-scaled-once-zero1-3ranks-gas5",
        "The fix: only engine.backward divides by GAS 5; stage 1 reduce-scatters the window's "
        "sum at the boundary: pass.", loop={}))
    memory = dict(deepspeed={"train_micro_batch_size_per_gpu": 2,
                             "gradient_accumulation_steps": 3},
                  golden={"train_batch_size": 12, "steps": 2}, world=2, tags=["memory"])
    bug = scenario(
        "keep-loss-with-graph-2ranks-gas3",
        "Two ranks, GAS 3, 40 steps: the loop appends every micro-batch's loss tensor to a list. "
        "After backward the loss no longer holds activations but still holds its autograd "
        "graph's nodes on the host heap, and a new one survives every micro-step; the "
        "gradients are untouched (engine.backward is unchanged): host_memory_leak.",
        diagnosis("host_memory_leak"), loop={"steps": 40, "keep": "loss_with_graph"}, **memory)
    out.append(bug)
    out.append(twin(
        bug, "keep-loss-item-2ranks-gas3",
        "The fix: loss.item() keeps a Python float; nothing survives a step: pass.",
        loop={"steps": 40, "keep": "loss_item"}))
    return out


def main():
    for old in HERE.glob("*.json"):
        old.unlink()
    written = bodies()
    names = [b["name"] for b in written]
    assert len(names) == len(set(names)), "duplicate scenario names"
    for body in written:
        scenario_file.write_body(HERE, body)
    print(f"{len(written)} scenarios")


if __name__ == "__main__":
    main()
