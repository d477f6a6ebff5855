"""One rank of a scenario run through the real DeepSpeed engine (started by the oracle's oracle.py,
and by `trainrepro run --engine deepspeed` through deepspeed_engine_worker.py).

Usage: ds_worker.py JOB.json   with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set.

The training loop is the one harness/loop/training_loop.cpp describes, written the way a user
writes it against DeepSpeed's API: `outputs = engine(inputs)` (or `engine.module(inputs)` with the
habit forward "module"), the loss computed by the loop,
`engine.backward(loss)` (or `loss.backward()`), `engine.step()` (or `optimizer.step()`), with the
scenario's habits. Micro-batch m of rank r gets samples [(m*W + r)*MB, (m*W + r + 1)*MB), as
trainrepro's loop feeds them. MB and GAS are what the DeepSpeed engine resolved, not trainrepro's
plan (the oracle compares the two). Writes JOB's out prefix + ".rank<R>.pt" with what happened.
"""
import contextlib
import copy
import json
import logging
import os
import sys
import time
import traceback

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402

EVALUATION_FIRST_SAMPLE = 1 << 20  # harness/loop/training_loop.h


class GradientsUnreadable(Exception):
    """DeepSpeed's own accessor cannot give a parameter's full gradient: the run is skipped with
    this reason (deepspeed_engine_worker.py), never judged on gradients the worker made up."""


def error_of(exception):
    return {"type": type(exception).__name__, "message": str(exception),
            "traceback": traceback.format_exc()}


def inner_optimizer(optimizer):
    """The torch.optim.Optimizer that actually steps (DeepSpeed may wrap it)."""
    seen = optimizer
    while not isinstance(seen, torch.optim.Optimizer) and hasattr(seen, "optimizer"):
        seen = seen.optimizer
    return seen


def optimizer_description(optimizer):
    inner = inner_optimizer(optimizer)
    group = inner.param_groups[0]
    description = {"class": f"{type(inner).__module__}.{type(inner).__name__}"}
    for key in ("lr", "weight_decay", "eps", "momentum", "dampening", "nesterov", "betas"):
        if key in group:
            value = group[key]
            description[key] = list(value) if isinstance(value, tuple) else value
    description["group_weight_decays"] = [g.get("weight_decay") for g in inner.param_groups]
    description["group_lrs"] = [float(g["lr"]) for g in inner.param_groups]
    if hasattr(inner, "adam_w_mode"):  # DeepSpeed's FusedAdam / DeepSpeedCPUAdam
        description["decoupled_weight_decay"] = bool(inner.adam_w_mode)
    elif isinstance(inner, torch.optim.AdamW):
        description["decoupled_weight_decay"] = True
    elif isinstance(inner, torch.optim.Adam):
        description["decoupled_weight_decay"] = bool(group.get("decoupled_weight_decay", False))
    return description


def as_accelerate_offloads(optimizer):
    """accelerate's map_pytorch_optim_to_deepspeed for torch AdamW: DeepSpeedCPUAdam over the same
    param groups (their betas, eps and weight decay), decoupled weight decay."""
    from deepspeed.ops.adam import DeepSpeedCPUAdam
    defaults = {k: v for k, v in optimizer.defaults.items() if k in ("lr", "weight_decay")}
    return DeepSpeedCPUAdam(optimizer.param_groups, adamw_mode=True, **defaults)


def module_of_job(job):
    """The scenario's model in float32 and the names of its trainable parameters: from the
    golden's initial weights; for an exported script (no golden file), trainrepro's own seeded
    initialisation with the user's frozen parameters frozen; for a config trainrepro says the
    engine refuses (no golden), the model's own initialisation."""
    golden = job.get("golden")
    if golden:
        from safetensors.torch import load_file
        tensors = load_file(golden["file"])
        names = golden["parameters"]
        module = zoo.build_model(job["model"], names,
                                 {n: tensors[f"init/{n}"] for n in names}, torch.float32)
        del tensors  # copied into the module: the golden's file is not the training's memory
        return module, names
    if job.get("seeded"):
        module = zoo.build_model_with_defaults(job["model"])
        zoo.initialise_as_trainrepro(module, job["model"].get("seed", 0))
        module = module.float()
        for name, parameter in module.named_parameters():
            if any(zoo.is_within(name, entry) for entry in job["model"].get("frozen", [])):
                parameter.requires_grad_(False)
        return module, [n for n, p in module.named_parameters() if p.requires_grad]
    torch.manual_seed(job["model"].get("seed", 0))
    module = zoo.build_model_with_defaults(job["model"])
    return module, [n for n, _ in module.named_parameters()]


def keeper_of(loop):
    """What the user's loop keeps across steps (scenario "loop.keep"), every micro-step, as
    harness/loop/kept_across_steps.cpp keeps it, as a function of (loss, outputs); None for
    nothing. Raises ValueError for a habit no worker loop performs."""
    keep = loop.get("keep", "nothing")
    keepers = {
        "nothing": None,
        "loss_item": lambda loss, outputs: loss.item(),
        "loss_with_graph": lambda loss, outputs: loss,
        "loss_detached": lambda loss, outputs: loss.detach(),
        "loss_on_cpu": lambda loss, outputs: loss.detach().cpu(),
        "outputs_with_graph": lambda loss, outputs: outputs,
        "outputs_detached": lambda loss, outputs: outputs.detach(),
        "outputs_on_cpu": lambda loss, outputs: outputs.detach().cpu(),
        # Once per optimizer step, not per micro-step: keep_after_step.
        "gathered_parameters": None,
        "gathered_parameter_norms": None,
    }
    if keep not in keepers:
        raise ValueError(f"loop.keep {keep!r}: the worker keeps none of "
                         f"{', '.join(k for k in keepers)} that way")
    return keepers[keep]


def keep_after_step(loop, gathered_parameters):
    """What the loop keeps from the full parameters after each optimizer step (scenario
    "loop.keep", as harness/loop/kept_across_steps.cpp keeps it), until the next step; None for
    nothing. gathered_parameters(read) gathers the whole parameters as the engine's users do
    (deepspeed.zero.GatheredParameters, FSDP2's full_tensor()) and returns read(whole) while they
    are gathered: a collective, on every rank."""
    keep = loop.get("keep", "nothing")
    if keep == "gathered_parameters":
        # The tensors themselves, kept until the next step: where the engine gathered them for
        # the occasion, the whole model stays alive on every rank.
        return gathered_parameters(lambda whole: list(whole))
    if keep == "gathered_parameter_norms":
        return gathered_parameters(lambda whole: [float(p.detach().norm()) for p in whole])
    return None


class Evaluation:
    """The loop's evaluation (scenario "loop.evaluation"): `batches` micro-batches of the
    evaluation samples through `forward`, under no_grad unless the habit omits it, each loss
    added to a number or (sum_as_tensor) to a tensor kept across evaluations."""

    def __init__(self, spec, source, micro_batch, module, forward):
        self.spec = {"every": 1, "batches": 1, "no_grad": True, "sum_as_tensor": False,
                     "backward": False}
        self.spec.update(spec)
        self.source, self.micro_batch, self.module, self.forward = (
            source, micro_batch, module, forward)
        self.done = 0
        self.tensor_sum, self.value_sum = None, 0.0

    def due(self, steps_done, steps_wanted):
        return steps_done % self.spec["every"] == 0 and steps_done < steps_wanted

    def __call__(self):
        spec, micro_batch = self.spec, self.micro_batch
        with torch.set_grad_enabled(not spec["no_grad"]):
            for b in range(spec["batches"]):
                first = EVALUATION_FIRST_SAMPLE + (self.done * spec["batches"] + b) * micro_batch
                batch = self.source.samples(first, first + micro_batch)
                outputs = self.forward(batch.inputs).float()
                loss = self.module.loss_sum(outputs, batch) / batch.items
                if spec["backward"]:
                    loss.backward()
                if spec["sum_as_tensor"]:
                    self.tensor_sum = loss if self.tensor_sum is None else self.tensor_sum + loss
                else:
                    self.value_sum += loss.item()
        self.done += 1


class StepTimer:
    """With job["time_steps"] (`perf run --engine deepspeed|fsdp2`), each optimizer step timed
    from its window's first micro-step to the end of the step that closes it, less what the
    worker itself records (gradient snapshots, recorded steps): RECORD["step_seconds"] and
    ["step_cpu_seconds"]."""

    def __init__(self, job, record):
        self.on = bool(job.get("time_steps"))
        self.record = record
        self.start = self.cpu_start = None
        self.excluded = 0.0
        record["step_seconds"] = []
        record["step_cpu_seconds"] = []

    @contextlib.contextmanager
    def untimed(self):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.excluded += time.perf_counter() - started

    def micro_step_starts(self):
        if self.on and self.start is None:
            self.start, self.cpu_start, self.excluded = \
                time.perf_counter(), time.process_time(), 0.0

    def micro_step_ends(self, stepped):
        if not (self.on and stepped):
            return
        ended, cpu_ended = time.perf_counter(), time.process_time()
        self.record["step_seconds"].append(ended - self.start - self.excluded)
        self.record["step_cpu_seconds"].append(cpu_ended - self.cpu_start - self.excluded)
        self.start = None


class WorkerMemory:
    """A worker's memory probe (make_memory_probe: memory_census.MemoryCensus, or None for none):
    samples where the reference engine's probes sample, the worker's own tensors (recorded
    gradients and parameters, the gradients of a step about to be recorded, the sample cache)
    left out of the training's memory."""

    def __init__(self, make_memory_probe, record, pending, source):
        self.record = record

        def harness_tensors():
            for step in record["steps"]:
                yield from step["gradients"]
                yield from step["parameters"]
            if pending["gradients"] is not None:
                yield from pending["gradients"]
            yield from source.cached_tensors()

        self.probe = make_memory_probe(harness_tensors) if make_memory_probe else None
        # What the worker records for itself is left out of the host heap the probe reads.
        self.harness_record = self.probe.record_of_harness if self.probe else \
            contextlib.nullcontext
        source.chunk_context = self.harness_record

    def sample(self, point, m):
        if self.probe:
            self.probe.sample(point, m, len(self.record["steps"]))

    def after_micro_step(self, m, stepped, evaluate, steps_wanted):
        """Micro-step m's samples, and at a boundary the evaluation the loop runs there."""
        self.sample("micro_step", m)
        if not stepped:
            return
        self.sample("boundary", m)
        if evaluate and evaluate.due(len(self.record["steps"]), steps_wanted):
            self.sample("before_evaluation", m)
            evaluate()
            self.sample("after_evaluation", m)

    def finish(self, *engine_roots):
        """The census's result, with the bytes of the storages the engine's objects reach
        (engine_roots: what deepspeed.initialize returned, or FSDP2's module and optimizer), for
        the judge of gathered parameters kept (judge_zero.cpp): what lives beyond them is the
        loop's."""
        if self.probe:
            self.record["memory"] = self.probe.result()
            self.record["memory"]["engine_tensor_bytes_at_end"] = \
                self.probe.bytes_reachable_from(engine_roots)


def window_items_per_rank(source, first_micro_step, window, world_size, micro_batch):
    """The items of the window starting at FIRST_MICRO_STEP across every rank (Hugging Face's
    num_items_in_batch), divided by the ranks: DeepSpeed's all-reduce and FSDP2's reduce-scatter
    average the ranks' gradients."""
    first = first_micro_step * world_size * micro_batch
    return source.samples(first, first + window * world_size * micro_batch).items / world_size


def run(job, rank, world_size, record, make_memory_probe=None):
    """Trains JOB on this rank, filling RECORD. With make_memory_probe (memory_census.MemoryCensus,
    called with a function that lists the worker's own tensors), memory is sampled where the
    reference engine's probes sample, and RECORD["memory"] holds the samples and what is alive."""
    import deepspeed
    from deepspeed.utils import logger as ds_logger
    ds_logger.setLevel(logging.WARNING)
    record["deepspeed_version"] = deepspeed.__version__
    deepspeed.init_distributed(dist_backend="gloo")

    module, names = module_of_job(job)
    golden = job.get("golden")
    module.checkpointing = job["loop"].get("activation_checkpointing", "none")
    model_parameters = list(module.parameters())
    if job.get("parameter_groups"):
        model_parameters = zoo.parameter_groups(module, job["parameter_groups"])
    # The script's own optimizer, built over the same parameters or groups, handed over as
    # deepspeed.initialize(optimizer=...): DeepSpeed uses it instead of the config's.
    client = zoo.client_optimizer(job["client_optimizer"], model_parameters) \
        if job.get("client_optimizer") else None
    # The Hugging Face Trainer's loop (job["trainer"]): with no optimizer in the config it builds
    # torch AdamW over two groups itself and passes it to deepspeed.initialize.
    trainer = job.get("trainer")
    if trainer and trainer.get("optimizer"):
        client = zoo.trainer_adamw(module, trainer["optimizer"])
        if trainer["optimizer"]["as_deepspeed_cpu_adam"]:  # the optimizer offloaded
            client = as_accelerate_offloads(client)
    started = time.time()
    try:
        engine, optimizer, _, lr_scheduler = deepspeed.initialize(model=module,
                                                       model_parameters=model_parameters,
                                                       optimizer=client,
                                                       config=copy.deepcopy(job["deepspeed"]))
    except Exception as exception:  # what DeepSpeed says about the config
        record["initialize_error"] = error_of(exception)
        return
    record["initialize_seconds"] = time.time() - started
    gas = engine.gradient_accumulation_steps()
    micro_batch = engine.train_micro_batch_size_per_gpu()
    record["engine"] = {
        "train_batch_size": engine.train_batch_size(),
        "train_micro_batch_size_per_gpu": micro_batch,
        "gradient_accumulation_steps": gas,
        "world_size": getattr(engine, "dp_world_size", world_size),
        "dist_world_size": deepspeed.comm.get_world_size(),
        "gradient_clipping": engine.gradient_clipping(),
        "zero_stage": engine.zero_optimization_stage(),
        "optimizer": optimizer_description(optimizer),
    }
    record["initialize_error"] = None
    # Without a golden (DeepSpeed was expected to refuse the config), one optimizer step of the
    # loop still runs: some refusals come from the loop's habits (loss.backward() at stage 0).
    loop = job["loop"]
    trains = golden or job.get("seeded")
    # The loop runs loop.steps optimizer steps; gradients and parameters are recorded for the
    # first job["steps"] (the golden's), as the reference engine records them.
    steps_recorded = job["steps"] if trains else 1
    steps_wanted = max(steps_recorded, int(job.get("loop_steps", steps_recorded))) \
        if trains else 1
    source = zoo.SampleSource(job["data"] if golden else zoo.data_with_defaults(job["data"]))
    parameters = zoo.trainable(engine.module)  # as the golden records them
    record["parameter_names"] = names
    record["steps"] = []
    record["micro_step_losses"] = []
    record["micro_step_items"] = []
    pending = {"gradients": None}
    backwards = [0]
    # ZeRO stages 1-3 keep each rank's reduced gradients and its fp32 weights in partitions, and
    # step the wrapped optimizer once per param group: the oracle assembles the full tensors
    # with DeepSpeed's own accessors (collectives, so every rank calls them at the same point of
    # the loop) around engine.step() instead of hooking the wrapped optimizer.
    zero_stage = engine.zero_optimization_stage()
    from deepspeed.utils import safe_get_full_fp32_param, safe_get_full_grad
    # bf16 or fp16 (where DeepSpeed runs it on this device): the module's weights are in that
    # dtype and the inputs arrive so; the loss is computed in float32 from the low-precision
    # outputs (as trainrepro's engine does). The parameters compared are the model's
    # low-precision weights after the step (what trainrepro records), read after engine.step()
    # has copied the float32 masters back.
    low_dtype = torch.bfloat16 if engine.bfloat16_enabled() else \
        torch.float16 if engine.fp16_enabled() else None

    def low_precision(inputs):
        return inputs.to(low_dtype) if low_dtype and inputs.is_floating_point() else inputs

    def model_weights():
        if not low_dtype:
            return [(p if zero_stage == 0 else safe_get_full_fp32_param(p)).detach().clone()
                    for p in parameters]
        if zero_stage == 3:
            with deepspeed.zero.GatheredParameters(parameters):
                return [p.detach().clone() for p in parameters]
        return [p.detach().clone() for p in parameters]

    zero_config = job["deepspeed"].get("zero_optimization")
    round_robin = isinstance(zero_config, dict) and zero_config.get("round_robin_gradients") is True

    def full_gradient(p):
        if zero_stage == 0:
            return p.grad
        try:
            return safe_get_full_grad(p)
        except RuntimeError as error:
            # Measured with 0.19.8: a GPT at ZeRO 2 on 2 ranks with round_robin_gradients, where
            # get_full_hp_grad copies fragments of different sizes; the training itself equals
            # the run without round_robin_gradients (parameters identical after 3 steps).
            if round_robin and zero_stage <= 2:
                raise GradientsUnreadable(
                    f"DeepSpeed {deepspeed.__version__}'s safe_get_full_grad cannot assemble the "
                    f"full gradients with round_robin_gradients on {world_size} ranks "
                    f"({error})") from error
            raise

    timer = StepTimer(job, record)

    def snapshot_gradients():
        with timer.untimed(), harness_record():
            take_gradients()

    def take_gradients():
        # What the update will use: the rate now (a scheduler steps after it), the loss scale
        # the window's gradients carry (1 without fp16), the skips so far.
        pending["lr"] = float(inner_optimizer(optimizer).param_groups[0]["lr"])
        pending["loss_scale"] = float(getattr(engine.optimizer, "cur_scale", 1.0) or 1.0)
        pending["skipped_before"] = int(getattr(engine, "skipped_steps", 0))
        # At stage 0 p.grad holds what backward produced, and the mixed-precision wrapper divides
        # it by cur_scale before the update: the gradient the update uses is p.grad / cur_scale,
        # which is what trainrepro records (unscaled, as its own engine does). DeepSpeed 0.18.2
        # scales a bf16 loss by 65536 and unscales it here; 0.18.3-0.18.5 unscale by 65536 a
        # loss never scaled (#7837), which this shows as gradients 65536 times too small.
        unscale = pending["loss_scale"] if zero_stage == 0 else 1.0
        pending["gradients"] = [g.detach().clone().float() / unscale if g is not None else
                                torch.zeros_like(p) for p, g in
                                ((p, full_gradient(p)) for p in parameters)]
        pending["micro_step"] = backwards[0]

    def record_step():
        if pending["gradients"] is None:
            raise RuntimeError("the optimizer stepped where the oracle did not expect it")
        with timer.untimed(), harness_record():
            gradients = pending["gradients"]
            norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in gradients)))
            recorded = len(record["steps"]) < steps_recorded
            record["steps"].append({
                "micro_step": pending["micro_step"],
                "through_engine": pending["through_engine"],
                "gradient_norm": norm,
                "recorded": recorded,
                "gradients": gradients if recorded else [],
                "parameters": model_weights() if recorded else [],
                "lr": pending["lr"],
                "loss_scale": pending["loss_scale"],
                "skipped": int(getattr(engine, "skipped_steps", 0)) > pending["skipped_before"],
            })
            pending["gradients"] = None
            del gradients

    # The wrapped optimizer's step hook fires before a mixed-precision wrapper copies its masters
    # back: bf16 and fp16 runs record after engine.step(), as ZeRO runs do.
    after_engine_step = zero_stage >= 1 or low_dtype is not None
    if not after_engine_step:
        inner_optimizer(optimizer).register_step_post_hook(lambda *_: record_step())

    evaluation = loop.get("evaluation")
    evaluate = Evaluation(evaluation, source, micro_batch, module,
                          lambda inputs: engine(low_precision(inputs))) if evaluation else None
    keeper = keeper_of(loop)
    kept = []
    kept_after_step = None

    def gathered_parameters(read):
        # Read-only (modifier_rank None); a no-op below ZeRO-3, where the parameters are whole.
        whole = list(engine.module.parameters())
        with deepspeed.zero.GatheredParameters(whole):
            return read(p.data for p in whole)

    memory = WorkerMemory(make_memory_probe, record, pending, source)
    harness_record = memory.harness_record

    def backward_as_the_trainer_does(loss, window_ends):
        # accelerate 1.8.0+ (DeepSpeedEngineWrapper.backward) hands DeepSpeed the Trainer's
        # sync_gradients as the boundary before every backward.
        if trainer["explicit_boundary"]:
            engine.set_gradient_accumulation_boundary(window_ends)
        if loss_scaling == "none":
            # A Trainer release whose loss reached backward undivided (4.46.0-4.46.1).
            loss.backward()
        else:
            # Trainer.training_step divides by its window (the token loss over the window's
            # items is already so), and accelerate passes scale_wrt_gas=False: DeepSpeed does not
            # divide again.
            engine.backward(loss / window, scale_wrt_gas=False)

    def step_as_the_trainer_does(window_ends):
        # engine.step() only at the window's end with 1.8.0+; after every backward before, where
        # DeepSpeed's own micro-step counter decides whether the optimizer steps.
        if window_ends or not trainer["explicit_boundary"]:
            if engine.is_gradient_accumulation_boundary():
                snapshot_gradients()
                pending["through_engine"] = True
            engine.step()

    zero_grad = loop.get("zero_grad", "boundary")
    loss_scaling = loop.get("loss_scaling", "engine")
    stepping = loop.get("stepping", "every_micro_step")
    normalisation = loop.get("token_normalisation", "whole_batch")
    forward = loop.get("forward", "engine")
    gradient_sync = loop.get("gradient_sync", "engine")
    managed = job["deepspeed"].get("managed_gradient_accumulation", True)
    # Under the Trainer its window decides, whatever gradient_accumulation_steps DeepSpeed
    # resolved (accelerate inserts 1 when the config has none).
    window = trainer["gradient_accumulation_steps"] if trainer else gas
    micro_step_limit = steps_wanted * window * max(gas, window) + window
    window_items = None
    m = 0
    while len(record["steps"]) < steps_wanted:
        if m >= micro_step_limit:
            raise RuntimeError(f"the loop took {m} micro-steps without reaching {steps_wanted} "
                               "optimizer steps")
        timer.micro_step_starts()
        first = (m * world_size + rank) * micro_batch
        batch = source.samples(first, first + micro_batch)
        if m % window == 0:
            window_items = window_items_per_rank(source, m, window, world_size, micro_batch)
        steps_before = len(record["steps"])
        window_ends = (m + 1) % window == 0

        if zero_grad == "every_micro_step":
            engine.zero_grad()
        # forward "module": the loss comes from engine.module(x), around the engine's hooks.
        inputs = low_precision(batch.inputs)
        outputs = engine.module(inputs) if forward == "module" else engine(inputs)
        loss_sum = module.loss_sum(outputs.float(), batch)
        if normalisation == "whole_batch":
            loss = loss_sum * (window / window_items)
        else:
            loss = loss_sum / batch.items
        if loss_scaling == "twice":
            loss = loss / window
        # The loop's own sync switch: `with engine.no_sync():` around the backwards it leaves
        # unsynced (DeepSpeed has no switch to sync more often than at its boundary).
        syncs = gradient_sync in ("engine", "every_micro_step") or (
            gradient_sync == "first_micro_step" and m % window == 0)
        with contextlib.nullcontext() if syncs else engine.no_sync():
            if trainer:
                backward_as_the_trainer_does(loss, window_ends)
            elif loss_scaling == "none":
                loss.backward()
            else:
                engine.backward(loss)
        backwards[0] += 1
        with harness_record():
            record["micro_step_losses"].append(float(loss_sum.detach()) / batch.items)
            record["micro_step_items"].append(int(batch.items))
        if keeper:
            kept.append(keeper(loss, outputs))

        if trainer:
            step_as_the_trainer_does(window_ends)
        elif stepping == "every_micro_step":
            if zero_grad == "never":  # steps the optimizer itself at the end of each window
                if window_ends:
                    snapshot_gradients()
                    pending["through_engine"] = False
                    optimizer.step()
            else:
                # Unmanaged accumulation (0.19.4+): every step() is the boundary, and
                # is_gradient_accumulation_boundary() is True only while step() runs.
                if engine.is_gradient_accumulation_boundary() or not managed:
                    snapshot_gradients()
                    pending["through_engine"] = True
                engine.step()
        elif stepping == "once_per_window":
            if window_ends:
                if engine.is_gradient_accumulation_boundary():
                    snapshot_gradients()
                    pending["through_engine"] = True
                engine.step()
        elif stepping == "optimizer_every_micro_step":
            snapshot_gradients()
            pending["through_engine"] = False
            optimizer.step()
            optimizer.zero_grad()
        else:
            raise ValueError(f"unknown stepping habit {stepping!r}")
        if after_engine_step and pending["gradients"] is not None:
            record_step()
        pending["gradients"] = None
        if len(record["steps"]) > steps_before:
            kept_after_step = keep_after_step(loop, gathered_parameters)
        # The loop's own lr_scheduler.step() on the scheduler deepspeed.initialize returned.
        if loop.get("lr_scheduler_step", "engine") == "every_micro_step":
            lr_scheduler.step()

        # The micro-batch's tensors are gone before memory is sampled, as the reference loop's
        # are (its micro-step is a function scope): samples show what the loop keeps.
        del batch, inputs, outputs, loss_sum, loss
        steps_done = len(record["steps"])
        timer.micro_step_ends(steps_done > steps_before)
        memory.after_micro_step(m, steps_done > steps_before, evaluate, steps_wanted)
        m += 1
    record["engine"]["global_steps"] = engine.global_steps
    record["engine"]["micro_steps"] = engine.micro_steps
    record["engine"]["skipped_steps"] = int(getattr(engine, "skipped_steps", 0))
    memory.finish(engine, optimizer, lr_scheduler)
    del kept_after_step


def main():
    job = json.load(open(sys.argv[1]))
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float32)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    record = {"rank": rank, "world_size": world_size, "error": None}
    try:
        run(job, rank, world_size, record)
    except Exception as exception:
        record["error"] = error_of(exception)
    torch.save(record, f"{job['out']}.rank{rank}.pt")
    try:
        import deepspeed.comm as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
