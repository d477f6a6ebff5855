#!/usr/bin/env python3
"""Writes scenarios/varieties/: setups the first suites lacked (3 ranks, GAS 3 and 6, long
runs, float64 ZeRO, uneven token lengths, periodic leaks, divergence), each bug with its fixed
twin. They exist to catch verdicts that hold only for the shapes the suite was written with.
Re-run after changing them, then `build/trainrepro golden --update scenarios/varieties`."""
import copy
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
MLP = {"name": "mlp", "options": {"dims": [10, 20, 3], "activation": "tanh"}, "seed": 51}
MLP_DATA = {"name": "classification", "options": {"features": 10, "classes": 3}, "seed": 52}
GPT = {"name": "gpt",
       "options": {"vocab_size": 24, "max_seq_len": 14, "d_model": 12, "heads": 2, "layers": 1},
       "seed": 53}
# Lengths from 2 to 14 tokens: micro-batches and ranks carry very different token counts.
TOKENS = {"name": "token_sequences",
          "options": {"vocab_size": 24, "min_length": 2, "max_length": 14}, "seed": 54}
ADAMW = {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}}


def scenario(name, description, expect, *, model=MLP, data=MLP_DATA, deepspeed, golden,
             world=1, dtype="float64", loop=None, memory=None, tags=()):
    body = {
        "name": name,
        "description": description,
        "tags": scenario_file.outcome_tags("varieties", expect, world, tags),
        "model": model,
        "data": data,
        "deepspeed": {**deepspeed, "optimizer": deepspeed.get("optimizer", ADAMW)},
        "world_size": world,
        "device": "auto",
        "dtype": dtype,
        "golden": golden,
        "expect": expect,
    }
    if world > 1:
        body["requires"] = ["mpi"]
    if loop:
        body["loop"] = loop
    if memory:
        body["memory"] = memory
    return body


def twin(bug, name, description, expect=None, loop=None, deepspeed=None):
    """The bug's fixed twin: same model, data and golden; the fix applied."""
    body = copy.deepcopy(bug)
    body["name"] = name
    body["description"] = description
    body["tags"] = ["varieties", "regression-test"] + [
        t for t in bug["tags"] if t not in ("varieties", "reproduction")]
    body["expect"] = expect or {"outcome": "pass"}
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


def pairs():
    out = []

    def add(bug, *twins):
        out.append(bug)
        out.extend(twins)

    # Token normalisation per rank: each rank averages its own micro-batch, then ranks average.
    for gas in (1, 3):
        bug = scenario(
            f"tokens-per-micro-batch-2ranks-gas{gas}",
            f"Two ranks, GAS {gas}, sequences of 2-14 tokens: each rank divides its micro-batch's "
            "token loss by its own token count, so tokens on the rank with fewer of them weigh "
            "more than in the large batch.",
            diagnosis("per_micro_batch_token_normalisation"), model=GPT, data=TOKENS,
            deepspeed={"train_batch_size": 4 * 2 * gas, "train_micro_batch_size_per_gpu": 4},
            golden={"train_batch_size": 4 * 2 * gas, "steps": 3}, world=2,
            loop={"token_normalisation": "per_micro_batch"}, tags=["tokens"])
        add(bug, twin(bug, f"tokens-whole-batch-2ranks-gas{gas}",
                      f"The fix on two ranks, GAS {gas}: the summed token loss is divided by the "
                      "tokens of the whole batch across ranks.", loop={}))
    bug = scenario(
        "eval-backward-2ranks",
        "Two ranks evaluate the same held-out micro-batch after every step without no_grad and "
        "call backward() on it: its gradient lands in the next step's accumulation.",
        diagnosis("backward_in_evaluation"),
        deepspeed={"train_batch_size": 24, "train_micro_batch_size_per_gpu": 6},
        golden={"train_batch_size": 24, "steps": 3}, world=2,
        loop={"evaluation": {"every": 1, "batches": 1, "no_grad": False, "backward": True}})
    add(bug, twin(bug, "eval-under-no-grad-2ranks",
                  "The fix: the two ranks evaluate under no_grad and never call backward.",
                  loop={"evaluation": {"every": 1, "batches": 1, "no_grad": True}}))
    bug = scenario(
        "optimizer-every-micro-step-2ranks-gas3",
        "Two ranks, GAS 3: optimizer.step() after every backward steps on each rank's own "
        "un-reduced gradient before the engine ever reaches a boundary.",
        diagnosis("optimizer_every_micro_step"),
        deepspeed={"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3},
        golden={"train_batch_size": 24, "steps": 3}, world=2,
        loop={"stepping": "optimizer_every_micro_step"})
    add(bug, twin(bug, "engine-step-every-micro-step-2ranks-gas3",
                  "The fix: engine.step() after every backward; the engine steps at the boundary.",
                  loop={}))
    bug = scenario(
        "loss-not-scaled-module-forward-2ranks-gas3",
        "Two ranks, GAS 3: loss.backward() on engine.module(x)'s loss neither divides by GAS nor "
        "reduces across ranks, so rank 0 steps on its own summed gradient.",
        diagnosis("loss_not_scaled"),
        deepspeed={"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 3},
        golden={"train_batch_size": 24, "steps": 3}, world=2,
        loop={"loss_scaling": "none", "forward": "module"})
    add(bug, twin(bug, "engine-backward-2ranks-gas3",
                  "The fix: engine.backward(loss) scales and reduces.", loop={}))
    bug = scenario(
        "zeroed-inside-window-3ranks-gas3",
        "Three ranks, GAS 3: zero_grad() before every backward leaves only the last micro-batch "
        "of each rank when the boundary reduces.",
        diagnosis("zeroed_inside_window"),
        deepspeed={"train_batch_size": 36, "gradient_accumulation_steps": 3},
        golden={"train_batch_size": 36, "steps": 3}, world=3,
        loop={"zero_grad": "every_micro_step"})
    add(bug, twin(bug, "zeroed-at-boundary-3ranks-gas3",
                  "The fix: the engine zeroes at the boundary.", loop={}))
    bug = scenario(
        "gas-missing-3ranks",
        "Three ranks, micro batch 4, intended batch 36, gradient_accumulation_steps not set: "
        "every step sees 12 samples. The fix must be one DeepSpeed accepts on 3 ranks.",
        diagnosis("no_accumulation"),
        deepspeed={"train_micro_batch_size_per_gpu": 4},
        golden={"train_batch_size": 36, "steps": 3}, world=3)
    add(bug, twin(bug, "gas-set-3ranks", "The fix: gradient_accumulation_steps 3 on 3 ranks.",
                  deepspeed={"train_micro_batch_size_per_gpu": 4,
                             "gradient_accumulation_steps": 3}))
    bug = scenario(
        "loss-scaled-twice-3ranks-gas6",
        "Three ranks, GAS 6: the loop divides by GAS and so does engine.backward.",
        diagnosis("loss_scaled_twice"),
        deepspeed={"train_batch_size": 36, "train_micro_batch_size_per_gpu": 2},
        golden={"train_batch_size": 36, "steps": 3}, world=3, loop={"loss_scaling": "twice"})
    add(bug, twin(bug, "gas6-3ranks", "The fix: only engine.backward divides by GAS 6.", loop={}))
    for stage in (2, 3):
        bug = scenario(
            f"float64-stage{stage}-3ranks-keeps-gathered-parameters",
            f"float64 ZeRO stage {stage} on three ranks, GAS 2; after every step the loop gathers "
            "the full parameters and keeps them until the next step.",
            diagnosis("gathered_parameters_kept") if stage == 3 else {"outcome": "pass"},
            deepspeed={"train_batch_size": 24, "gradient_accumulation_steps": 2,
                       "zero_optimization": {"stage": stage}},
            golden={"train_batch_size": 24, "steps": 3}, world=3,
            loop={"keep": "gathered_parameters"}, tags=["zero"])
        add(bug, twin(bug, f"float64-stage{stage}-3ranks",
                      f"A correct float64 ZeRO stage {stage} loop on three ranks, GAS 2: nothing "
                      "kept, nothing falsely blamed.", loop={}))
    bug = scenario(
        "stage3-micro-batch-64",
        "ZeRO stage 3 on two ranks with a micro batch of 64 on a tiny model: the current "
        "micro-batch's inputs and outputs must not count as kept parameters.",
        {"outcome": "pass"},
        model={"name": "mlp", "options": {"dims": [4, 6, 2]}, "seed": 55},
        data={"name": "classification", "options": {"features": 4, "classes": 2}, "seed": 56},
        deepspeed={"train_batch_size": 128, "train_micro_batch_size_per_gpu": 64,
                   "zero_optimization": {"stage": 3}},
        golden={"train_batch_size": 128, "steps": 2}, world=2, dtype="float32",
        loop={"steps": 22}, tags=["zero", "memory"])
    add(bug, twin(bug, "stage3-micro-batch-64-keeps-gathered-parameters",
                  "The same with the loop keeping gathered parameters between steps.",
                  expect=diagnosis("gathered_parameters_kept"),
                  loop={"steps": 22, "keep": "gathered_parameters"}))
    # Memory: long runs, small and periodic leaks.
    long_run = dict(deepspeed={"train_micro_batch_size_per_gpu": 4,
                               "gradient_accumulation_steps": 2},
                    dtype="float32", tags=["memory"])
    bug = scenario(
        "compare-every-step-keep-detached-loss",
        "Every one of 40 steps compared with the golden (its copies must not count as a leak), "
        "while the loop keeps loss.detach() each micro-batch.",
        diagnosis("tensor_memory_leak"), golden={"train_batch_size": 8, "steps": 40},
        loop={"steps": 40, "keep": "loss_detached"}, **long_run)
    add(bug, twin(bug, "compare-every-step-keep-loss-item",
                  "40 compared steps, the loop keeps loss.item(): bounded.",
                  loop={"steps": 40, "keep": "loss_item"}))
    bug = scenario(
        "mlp-keep-outputs-detached",
        "The MLP's detached outputs kept every micro-batch: a small leak (a few hundred bytes per "
        "step) is still a leak.",
        diagnosis("tensor_memory_leak"), golden={"train_batch_size": 8, "steps": 2},
        loop={"steps": 40, "keep": "outputs_detached"}, **long_run)
    add(bug, twin(bug, "mlp-keep-nothing-40-steps", "The fix: nothing kept.",
                  loop={"steps": 40}))
    bug = scenario(
        "mlp-keep-loss-on-cpu",
        "loss.detach().cpu() kept every micro-batch: off the device, still a tensor per step.",
        diagnosis("tensor_memory_leak"), golden={"train_batch_size": 8, "steps": 2},
        loop={"steps": 40, "keep": "loss_on_cpu"}, **long_run)
    add(bug, twin(bug, "mlp-keep-loss-item-40-steps", "The fix: loss.item().",
                  loop={"steps": 40, "keep": "loss_item"}))
    bug = scenario(
        "eval-every-10-summed-without-no-grad",
        "An evaluation every 10 steps sums its loss as a tensor without no_grad: the leak recurs "
        "less often than the default window of 8 boundaries.",
        diagnosis("tensor_memory_leak"), golden={"train_batch_size": 8, "steps": 2},
        loop={"steps": 60, "evaluation": {"every": 10, "batches": 1, "no_grad": False,
                                          "sum_as_tensor": True}}, **long_run)
    add(bug, twin(bug, "eval-every-10-under-no-grad",
                  "The fix: the evaluation every 10 steps runs under no_grad.",
                  loop={"steps": 60, "evaluation": {"every": 10, "batches": 1, "no_grad": True,
                                                    "sum_as_tensor": True}}))
    bug = scenario(
        "adam-betas-out-of-range-diverges",
        "Adam with betas [-5, 7]: training turns to NaN on both sides; NaN equal to NaN is no pass.",
        diagnosis("training_diverged"),
        deepspeed={"train_batch_size": 24, "train_micro_batch_size_per_gpu": 6,
                   "optimizer": {"type": "Adam", "params": {"lr": 0.01, "betas": [-5, 7]}}},
        golden={"train_batch_size": 24, "steps": 4})
    add(bug, twin(bug, "adam-betas-default", "The fix: Adam's default betas.",
                  deepspeed={"train_batch_size": 24, "train_micro_batch_size_per_gpu": 6},
                  ))
    out[-1]["deepspeed"]["optimizer"] = {"type": "Adam", "params": {"lr": 0.01}}
    return out


def main():
    for old in HERE.glob("*.json"):
        old.unlink()
    bodies = pairs()
    names = [b["name"] for b in bodies]
    assert len(names) == len(set(names)), "duplicate scenario names"
    for body in bodies:
        scenario_file.write_body(HERE, body)
    print(f"{len(bodies)} scenarios")


if __name__ == "__main__":
    main()
