"""What the DeepSpeed worker (ds_worker.py) and the FSDP2 worker (fsdp2_worker.py) share: the
model a job describes, the optimizer as the trace describes it, what the user's loop keeps and
evaluates, the step timer, the memory probe, and the items of a window across ranks. Each worker
imports these from here; neither imports the other.
"""
import contextlib
import time

import torch

import zoo

EVALUATION_FIRST_SAMPLE = 1 << 20  # harness/loop/training_loop.h


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
