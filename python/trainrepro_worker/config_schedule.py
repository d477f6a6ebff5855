"""The ds_config's "scheduler" as a torch LR scheduler, for a loop without DeepSpeed (the FSDP2
worker): what an FSDP2 user writes to keep the schedule their DeepSpeed config gave them.

The rates follow DeepSpeed's own classes (deepspeed/runtime/lr_schedules.py, 0.19.8: WarmupLR,
WarmupDecayLR, WarmupCosineLR, OneCycle with its momentum cycle), read from its source, not from trainrepro's C++: the run is then
an independent check of the schedule the golden follows. DeepSpeed counts a
last_batch_iteration that starts at -1 (the rate written when the scheduler is built) and steps it
after every optimizer step; torch's LRScheduler counts last_epoch from 0 at construction, so
DeepSpeed's iteration is last_epoch - 1.

The job gives the schedule as trainrepro resolved the config (lr_schedule_to_json in
harness/scenario/lr_schedule.cpp): "type", "warmup_num_steps", "warmup_type", and per type
"warmup_min_lr" / "warmup_max_lr" (a number, or "optimizer lr": each group's own lr),
"total_num_steps", "warmup_min_ratio", "cos_min_ratio", "cosine_progress_clamped"; OneCycle's
"cycle_*", "decay_*" keys as resolved (second step size and stair count filled) and
"stair_counts_applied".
"""
import math

import torch


class NotMapped(Exception):
    """A scheduler this module has no torch counterpart for yet."""


def _warmup_fraction(spec, iteration, warmup):
    """DeepSpeed's warm-up gamma for iteration < warmup: log(i + 1) / log(W), or i / W."""
    if spec.get("warmup_type", "log") == "linear":
        return iteration / warmup
    return math.log(iteration + 1) / math.log(warmup)


def _one_cycle_scale(spec, iteration):
    """OneCycle's place in its cycle for last_batch_iteration `iteration` (DeepSpeed looks one
    batch ahead): 0 at the bottom, 1 at the peak; with stair counts, held flat on stairs."""
    batch = iteration + 1
    first, second = float(spec["cycle_first_step_size"]), float(spec["cycle_second_step_size"])
    total = first + second
    step_ratio = first / total
    x = 1.0 + batch / total - math.floor(1 + batch / total)
    if x <= step_ratio:
        scale, stairs = x / step_ratio, spec["cycle_first_stair_count"]
    else:
        scale, stairs = (x - 1) / (step_ratio - 1), spec["cycle_second_stair_count"]
    if stairs > 0 and spec.get("stair_counts_applied", True):
        offset = batch % total
        position = offset * stairs / first if offset <= first else \
            (total - offset) * stairs / second
        scale = math.floor(position) / stairs
    return scale


def _one_cycle_decay_intervals(spec, iteration):
    """Decay intervals since the cycle ended, or None where DeepSpeed skips the decay."""
    total = spec["cycle_first_step_size"] + spec["cycle_second_step_size"]
    if math.isclose(spec["decay_step_size"], 0):
        return None
    return (iteration - total + 1) / spec["decay_step_size"]


def _one_cycle_rate(spec, iteration):
    low, high = spec["cycle_min_lr"], spec["cycle_max_lr"]
    if iteration < 0:
        return low
    if iteration < spec["cycle_first_step_size"] + spec["cycle_second_step_size"]:
        return low + (high - low) * _one_cycle_scale(spec, iteration)
    intervals = _one_cycle_decay_intervals(spec, iteration)
    if intervals is None or math.isclose(spec["decay_lr_rate"], 0):
        return low
    return low / (1 + spec["decay_lr_rate"] * intervals)


def one_cycle_beta1(spec, iteration):
    """The momentum (Adam's beta1) OneCycle writes at `iteration`; DeepSpeed pairs it with
    beta2 0.99 in every group whose optimizer has betas."""
    low, high = spec["cycle_min_mom"], spec["cycle_max_mom"]
    if iteration < 0:
        return low
    if iteration < spec["cycle_first_step_size"] + spec["cycle_second_step_size"]:
        return high - (high - low) * _one_cycle_scale(spec, iteration)
    intervals = _one_cycle_decay_intervals(spec, iteration)
    if intervals is None or math.isclose(spec["decay_mom_rate"], 0):
        return high
    return high * (1 + spec["decay_mom_rate"] * intervals)


def rate(spec, iteration, group_lr):
    """The learning rate DeepSpeed's scheduler writes at `iteration` (-1: when it is built) for a
    param group whose own lr is `group_lr`."""
    kind = spec["type"].lower()
    if kind == "onecycle":
        return _one_cycle_rate(spec, iteration)
    warmup = max(2, int(spec["warmup_num_steps"]))  # DeepSpeed warms up over at least 2
    if kind == "warmupcosinelr":
        if iteration < 0:
            return 0.0  # get_lr() before the first step: 0 for every group
        if iteration < warmup:
            low = spec["warmup_min_ratio"]
            return group_lr * (low + _warmup_fraction(spec, iteration, warmup) * (1.0 - low))
        done = iteration - warmup + 1
        span = spec["total_num_steps"] - warmup
        if spec.get("cosine_progress_clamped", True):  # 0.19.3+
            span = max(1, span)
            progress = min(1.0, done / span)
        else:
            progress = done / span
        floor = spec["cos_min_ratio"]
        return group_lr * max(0.0, floor + (1.0 - floor) * (1 + math.cos(math.pi * progress)) / 2)
    if kind not in ("warmuplr", "warmupdecaylr"):
        raise NotMapped(f"the config's scheduler {spec['type']} (/deepspeed/scheduler/type: only "
                        "WarmupLR, WarmupDecayLR, WarmupCosineLR and OneCycle are mapped to "
                        "torch yet)")
    low = spec["warmup_min_lr"]
    high = group_lr if spec["warmup_max_lr"] == "optimizer lr" else spec["warmup_max_lr"]
    if iteration < 0:
        return low
    if iteration < warmup:
        gamma = _warmup_fraction(spec, iteration, warmup)
    elif kind == "warmupdecaylr":
        total = spec["total_num_steps"]
        gamma = max(0.0, (total - iteration) / max(1.0, total - warmup))
    else:
        gamma = 1.0
    return low + (high - low) * gamma


class ConfigSchedule(torch.optim.lr_scheduler.LRScheduler):
    """torch's scheduler protocol over DeepSpeed's rates: scheduler.step() after every
    optimizer step, as DeepSpeed's engine.step() does at each boundary."""

    def __init__(self, optimizer, spec):
        rate(spec, -1, 1.0)  # refuses a type it cannot map before touching the optimizer
        self.spec = spec
        # DeepSpeed reads each group's lr when the scheduler is built (its "optimizer lr").
        self.group_lrs = [group["lr"] for group in optimizer.param_groups]
        super().__init__(optimizer)

    def get_lr(self):
        iteration = self.last_epoch - 1
        return [rate(self.spec, iteration, lr) for lr in self.group_lrs]

    def step(self, epoch=None):
        """The rates, then OneCycle's momentum where it cycles it: DeepSpeed writes
        (beta1, 0.99) into the groups' betas, unless the optimizer has no betas (SGD)."""
        super().step(epoch)
        spec = self.spec
        if spec["type"].lower() != "onecycle" or not spec.get("cycle_momentum", True) or \
                "betas" not in self.optimizer.defaults:
            return
        beta1 = one_cycle_beta1(spec, self.last_epoch - 1)
        for group in self.optimizer.param_groups:
            group["betas"] = (beta1, 0.99)
