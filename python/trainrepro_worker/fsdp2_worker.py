"""One rank of a scenario trained by PyTorch's FSDP2 (`trainrepro run --engine fsdp2`), started by
deepspeed_engine_worker.py like a DeepSpeed rank and filling the same record, so the trace,
judges and reports are the same.

The loop is the one an FSDP2 user writes for what the scenario's DeepSpeed config says (docs/engines.md,
"FSDP2 as the engine under test", has the table):
  - the model from the golden's initial weights, `fully_shard(model, mesh)` over a CPU mesh of the
    ranks (gloo); `reshard_after_forward=True` at ZeRO stage 3, False at stages 0-2 (FSDP2 shards
    parameters, gradients and optimizer states at every stage: it has no stage that shards less);
  - the config's optimizer as its torch.optim class, over the same parameters or groups: Adam with
    DeepSpeed's default adam_w_mode -> AdamW, Adam with adam_w_mode false -> Adam (L2), AdamW,
    SGD; the script's own optimizer (client_optimizer) as the scenario builds it;
  - the config's scheduler (WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle) as a torch
    LRScheduler with DeepSpeed's rates and OneCycle's momentum (config_schedule.py), stepped after
    every optimizer step;
  - ZeRO offload_optimizer on the CPU: `offload_policy=CPUOffloadPolicy(pin_memory=False)` (FSDP2
    offloads the parameters and gradients too; NVMe offload has no counterpart);
  - bf16: `MixedPrecisionPolicy(param_dtype=torch.bfloat16)` over float32 sharded parameters,
    `reduce_dtype=torch.float32` where DeepSpeed accumulates gradients in float32;
  - accumulation: `model.set_requires_gradient_sync(False)` on the micro-steps inside a window,
    True on its last; the loss divided by gradient_accumulation_steps by the loop (DeepSpeed's
    engine.backward does it there), at the boundary `clip_grad_norm_` when gradient_clipping > 0,
    then `optimizer.step()` and `optimizer.zero_grad()`.
The habits (scenario "loop") are performed the FSDP2 way: zero_grad every micro-step calls
optimizer.zero_grad() before each, loss_scaling "twice" divides by GAS twice and "none" not at all,
stepping "optimizer_every_micro_step" steps and zeroes after every micro-step (no clipping, as a
loop that calls the optimizer itself does), "once_per_window" is this loop's own way;
gradient_sync sets `set_requires_gradient_sync` before every backward ("every_micro_step": True,
"first_micro_step": True on a window's first only, "never": False).

Recorded as ds_worker records: the full gradients before clipping (`DTensor.full_tensor()`, a
collective every rank calls) and the full parameters after the step, for the first JOB["steps"]
optimizer steps.
"""
import warnings

import torch

import config_schedule
import loop_pieces
import zoo

# A loop that steps the scheduler every micro-batch (loop.lr_scheduler_step) calls it before the
# first optimizer.step(): torch's warning about that order is the habit under test, not news.
warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before")


class NotExpressible(Exception):
    """What the scenario asks has no FSDP2 counterpart in this worker: the run is skipped with
    this reason, never judged on a loop that is not the scenario's."""


def optimizer_for(spec, parameters):
    """The torch.optim optimizer an FSDP2 user builds for the config's (the plan trainrepro
    resolved with DeepSpeed's defaults)."""
    kind = spec["kind"]
    if kind in ("adam", "adamw"):
        decoupled = kind == "adamw" or spec["decoupled_weight_decay"]
        optimizer_class = torch.optim.AdamW if decoupled else torch.optim.Adam
        try:
            return optimizer_class(parameters, lr=spec["lr"],
                                   betas=(spec["beta1"], spec["beta2"]), eps=spec["eps"],
                                   weight_decay=spec["weight_decay"])
        except ValueError as refusal:  # torch checks the ranges, DeepSpeed's Adam does not
            raise NotExpressible(f"torch.optim.{optimizer_class.__name__} refuses the config's "
                                 f"optimizer params ({refusal}); DeepSpeed's Adam takes "
                                 "them") from None
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=spec["lr"], momentum=spec["momentum"],
                               dampening=spec["dampening"], nesterov=spec["nesterov"],
                               weight_decay=spec["weight_decay"])
    raise NotExpressible(f"the config's optimizer {spec['type_as_written'] or kind!r} has no "
                         "torch.optim class (DeepSpeed's own)")


def mixed_precision_policy(plan):
    """The FSDP2 policy for the config's precision: bf16 computes in bfloat16 over float32
    sharded parameters (DeepSpeed's float32 master weights); the gradients are reduced, and while
    gradient sync is off accumulated, in float32 where DeepSpeed accumulates them in float32
    (torch 2.11 _fsdp_param.py to_accumulated_grad_if_needed upcasts them to reduce_dtype), in
    bfloat16 where DeepSpeed does (reduce_dtype None: the parameters' dtype)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy

    if plan["precision"] == "fp32":
        return MixedPrecisionPolicy()
    if plan["precision"] != "bf16":
        raise NotExpressible(f"{plan['precision']} has no FSDP2 counterpart in this worker")
    return MixedPrecisionPolicy(
        param_dtype=torch.bfloat16,
        reduce_dtype=torch.float32 if plan["accumulate_in_fp32"] else None)


def offload_policy(plan):
    """ZeRO's offload_optimizer on the CPU as FSDP2 offloads: CPUOffloadPolicy keeps the sharded
    parameters, their gradients and the optimizer states in host memory and steps there
    (DeepSpeed offloads the optimizer states, its float32 master weights and the step, not the
    parameters the model computes with). Unpinned: pinning needs an accelerator, and this worker
    trains on the CPU, where the policy's copies are the offload path itself."""
    from torch.distributed.fsdp import CPUOffloadPolicy, OffloadPolicy

    if plan["offload_optimizer"] == "cpu":
        return CPUOffloadPolicy(pin_memory=False)
    if plan["offload_optimizer"] != "none":
        raise NotExpressible(f"offload to {plan['offload_optimizer']!r}: FSDP2 offloads to host "
                             "memory only")
    return OffloadPolicy()


def full(tensor):
    """A DTensor's whole value on every rank (a collective); a plain tensor as it is."""
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


_MESHES = {}


def device_mesh(world_size):
    """The CPU device mesh over the ranks, made once per process. A serving rank (serving.py)
    makes it with its process group, before its first job: torch's DTensor dispatch caches
    (the C++ fast path's among them) keep every mesh an op ran on alive, with its mesh tensor
    (torch 2.11, measured), so a mesh made per job would be left behind by every job."""
    from torch.distributed.device_mesh import init_device_mesh
    if world_size not in _MESHES:
        _MESHES[world_size] = init_device_mesh("cpu", (world_size,))
    return _MESHES[world_size]


def run(job, rank, world_size, record, make_memory_probe=None, engines=None):
    """Trains JOB on this rank with FSDP2, filling RECORD as ds_worker.run does. ENGINES (a
    serving rank's list of what to destroy after the job) stays empty: FSDP2 has no engine
    object, and its module, hooks and states go with this call's frame."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    plan = job["fsdp2"]
    if not dist.is_initialized():  # a serving rank (serving.py) started it once, for every job
        dist.init_process_group("gloo")
    mesh = device_mesh(world_size)
    module, names = loop_pieces.module_of_job(job)
    loop = job["loop"]
    module.checkpointing = loop.get("activation_checkpointing", "none")
    module.checkpoint_library = "torch"  # torch.utils.checkpoint, as an FSDP2 user checkpoints
    fully_shard(module, mesh=mesh, reshard_after_forward=plan["zero_stage"] == 3,
                mp_policy=mixed_precision_policy(plan), offload_policy=offload_policy(plan))
    model_parameters = list(module.parameters())
    if job.get("parameter_groups"):
        model_parameters = zoo.parameter_groups(module, job["parameter_groups"])
    optimizer = zoo.client_optimizer(job["client_optimizer"], model_parameters) \
        if job.get("client_optimizer") else optimizer_for(plan["optimizer"], model_parameters)
    # The config's scheduler, as torch's (config_schedule.py); stepped after every optimizer step
    # at a window's end, as DeepSpeed's engine.step() steps it.
    scheduler = None
    if plan.get("lr_schedule"):
        try:
            scheduler = config_schedule.ConfigSchedule(optimizer, plan["lr_schedule"])
        except config_schedule.NotMapped as why:
            raise NotExpressible(str(why)) from None

    gas, micro_batch = plan["gradient_accumulation_steps"], plan["train_micro_batch_size_per_gpu"]
    clipping = plan["gradient_clipping"]
    record["engine"] = {
        "train_batch_size": gas * micro_batch * world_size,
        "train_micro_batch_size_per_gpu": micro_batch,
        "gradient_accumulation_steps": gas,
        "world_size": world_size,
        "dist_world_size": dist.get_world_size(),
        "gradient_clipping": clipping,
        "zero_stage": plan["zero_stage"],
        "optimizer": loop_pieces.optimizer_description(optimizer),
    }
    record["initialize_error"] = None
    steps_recorded = job["steps"]
    steps_wanted = max(steps_recorded, int(job.get("loop_steps", steps_recorded)))
    source = zoo.SampleSource(job["data"])
    parameters = zoo.trainable(module)
    record["parameter_names"] = names
    record["steps"] = []
    record["micro_step_losses"] = []
    record["micro_step_items"] = []
    pending = {"gradients": None}

    memory = loop_pieces.WorkerMemory(make_memory_probe, record, pending, source)
    harness_record = memory.harness_record
    timer = loop_pieces.StepTimer(job, record)

    def take_gradients(backwards_done):
        # The trace counts backwards seen at the step (1-based), as ds_worker does.
        with timer.untimed(), harness_record():
            pending["gradients"] = [full(p.grad).detach().clone() if p.grad is not None else
                                    torch.zeros_like(full(p)) for p in parameters]
            pending["lr"] = float(optimizer.param_groups[0]["lr"])
            pending["micro_step"] = backwards_done

    def record_step():
        with timer.untimed(), harness_record():
            gradients = pending["gradients"]
            recorded = len(record["steps"]) < steps_recorded
            record["steps"].append({
                "micro_step": pending["micro_step"], "through_engine": False,
                "gradient_norm": float(torch.sqrt(sum((g.double() ** 2).sum() for g in gradients))),
                "recorded": recorded,
                "gradients": gradients if recorded else [],
                "parameters": [full(p).detach().clone() for p in parameters] if recorded else [],
                "lr": pending["lr"], "loss_scale": 1.0, "skipped": False})
            pending["gradients"] = None
            del gradients

    evaluation = loop.get("evaluation")
    evaluate = loop_pieces.Evaluation(evaluation, source, micro_batch, module, module) \
        if evaluation else None
    keeper = loop_pieces.keeper_of(loop)
    kept = []
    kept_after_step = None

    def gathered_parameters(read):
        # FSDP2's users read whole parameters with full_tensor(): a fresh all-gathered tensor.
        return read(full(p).detach() for p in module.parameters())

    zero_grad = loop.get("zero_grad", "boundary")
    loss_scaling = loop.get("loss_scaling", "engine")
    stepping = loop.get("stepping", "every_micro_step")
    normalisation = loop.get("token_normalisation", "whole_batch")
    gradient_sync = loop.get("gradient_sync", "engine")
    window_items = None
    m = 0
    while len(record["steps"]) < steps_wanted:
        timer.micro_step_starts()
        first = (m * world_size + rank) * micro_batch
        batch = source.samples(first, first + micro_batch)
        if m % gas == 0:
            window_items = loop_pieces.window_items_per_rank(source, m, gas, world_size, micro_batch)
        window_ends = (m + 1) % gas == 0
        steps_before = len(record["steps"])
        if zero_grad == "every_micro_step":
            optimizer.zero_grad()
        # Gradients are reduce-scattered only on the window's last micro-step; before it each
        # rank accumulates its unsharded gradients. The loop's own switch (loop.gradient_sync)
        # may sync every backward, only the window's first (an off-by-one) or none.
        if gradient_sync == "engine":
            syncs = window_ends or stepping == "optimizer_every_micro_step"
        else:
            syncs = gradient_sync == "every_micro_step" or (
                gradient_sync == "first_micro_step" and m % gas == 0)
        module.set_requires_gradient_sync(syncs)
        outputs = module(batch.inputs)
        loss_sum = module.loss_sum(outputs.float(), batch)
        loss = loss_sum * (gas / window_items) if normalisation == "whole_batch" \
            else loss_sum / batch.items
        if loss_scaling == "engine":
            loss = loss / gas  # what DeepSpeed's engine.backward divides by, done by the loop
        elif loss_scaling == "twice":
            loss = loss / gas / gas
        loss.backward()
        with harness_record():
            record["micro_step_losses"].append(float(loss_sum.detach()) / batch.items)
            record["micro_step_items"].append(int(batch.items))
        if keeper:
            kept.append(keeper(loss, outputs))
        if stepping == "optimizer_every_micro_step":
            take_gradients(m + 1)
            optimizer.step()
            record_step()
            optimizer.zero_grad()
        elif window_ends:
            take_gradients(m + 1)
            if clipping > 0:
                torch.nn.utils.clip_grad_norm_(parameters, clipping)
            optimizer.step()
            record_step()
            if scheduler:
                scheduler.step()
            if zero_grad != "never":
                optimizer.zero_grad()
        # The loop's own lr_scheduler.step() after every micro-batch, besides the boundary's.
        if scheduler and loop.get("lr_scheduler_step", "engine") == "every_micro_step":
            scheduler.step()
        if len(record["steps"]) > steps_before:
            kept_after_step = loop_pieces.keep_after_step(loop, gathered_parameters)
        del batch, outputs, loss_sum, loss
        stepped = len(record["steps"]) > steps_before
        timer.micro_step_ends(stepped)
        memory.after_micro_step(m, stepped, evaluate, steps_wanted)
        m += 1
    record["engine"]["global_steps"] = len(record["steps"])
    record["engine"]["micro_steps"] = m
    record["engine"]["skipped_steps"] = 0
    memory.finish(module, optimizer, scheduler)
    del kept_after_step
