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
from loop_pieces import (Evaluation, StepTimer, WorkerMemory, inner_optimizer,  # noqa: E402
                         keep_after_step, keeper_of, module_of_job, optimizer_description,
                         window_items_per_rank)

class GradientsUnreadable(Exception):
    """DeepSpeed's own accessor cannot give a parameter's full gradient: the run is skipped with
    this reason (deepspeed_engine_worker.py), never judged on gradients the worker made up."""


def error_of(exception):
    return {"type": type(exception).__name__, "message": str(exception),
            "traceback": traceback.format_exc()}


def as_accelerate_offloads(optimizer):
    """accelerate's map_pytorch_optim_to_deepspeed for torch AdamW: DeepSpeedCPUAdam over the same
    param groups (their betas, eps and weight decay), decoupled weight decay."""
    from deepspeed.ops.adam import DeepSpeedCPUAdam
    defaults = {k: v for k, v in optimizer.defaults.items() if k in ("lr", "weight_decay")}
    return DeepSpeedCPUAdam(optimizer.param_groups, adamw_mode=True, **defaults)


def initialize_engine(deepspeed, job, world_size, record, engines=None):
    """What DeepSpeed makes of the job's config: the module (from the golden's weights) and
    deepspeed.initialize's engine, optimizer and scheduler, with what the engine resolved in
    RECORD["engine"]; None when initialize refused the config (RECORD["initialize_error"]).
    The engine is appended to ENGINES when given (serving.py destroys it after the job)."""
    module, names = module_of_job(job)
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
        return None
    record["initialize_seconds"] = time.time() - started
    if engines is not None:
        engines.append(engine)
    record["engine"] = {
        "train_batch_size": engine.train_batch_size(),
        "train_micro_batch_size_per_gpu": engine.train_micro_batch_size_per_gpu(),
        "gradient_accumulation_steps": engine.gradient_accumulation_steps(),
        "world_size": getattr(engine, "dp_world_size", world_size),
        "dist_world_size": deepspeed.comm.get_world_size(),
        "gradient_clipping": engine.gradient_clipping(),
        "zero_stage": engine.zero_optimization_stage(),
        "optimizer": optimizer_description(optimizer),
    }
    record["initialize_error"] = None
    return module, names, engine, optimizer, lr_scheduler


class StepRecorder:
    """What the worker records of each optimizer step: the gradients the update uses (taken just
    before it), the weights after it, the rate, loss scale and skip. ZeRO stages 1-3 keep each
    rank's reduced gradients and its fp32 weights in partitions, and step the wrapped optimizer
    once per param group: the full tensors come from DeepSpeed's own accessors (collectives, so
    every rank calls them at the same point of the loop) around engine.step() instead of a hook
    on the wrapped optimizer."""

    def __init__(self, deepspeed, job, engine, optimizer, record, steps_recorded, world_size):
        self.deepspeed, self.engine, self.optimizer = deepspeed, engine, optimizer
        self.record, self.steps_recorded, self.world_size = record, steps_recorded, world_size
        self.parameters = zoo.trainable(engine.module)  # as the golden records them
        self.pending = {"gradients": None}
        self.backwards = 0
        self.zero_stage = engine.zero_optimization_stage()
        # bf16 or fp16 (where DeepSpeed runs it on this device): the module's weights are in
        # that dtype and the inputs arrive so; the loss is computed in float32 from the
        # low-precision outputs (as trainrepro's engine does). The parameters compared are the
        # model's low-precision weights after the step (what trainrepro records), read after
        # engine.step() has copied the float32 masters back.
        self.low_dtype = torch.bfloat16 if engine.bfloat16_enabled() else \
            torch.float16 if engine.fp16_enabled() else None
        zero_config = job["deepspeed"].get("zero_optimization")
        self.round_robin = isinstance(zero_config, dict) and \
            zero_config.get("round_robin_gradients") is True
        self.timer = StepTimer(job, record)
        self.harness_record = contextlib.nullcontext  # the memory probe's, once it exists
        # The wrapped optimizer's step hook fires before a mixed-precision wrapper copies its
        # masters back: bf16 and fp16 runs record after engine.step(), as ZeRO runs do.
        self.after_engine_step = self.zero_stage >= 1 or self.low_dtype is not None
        if not self.after_engine_step:
            inner_optimizer(optimizer).register_step_post_hook(lambda *_: self.record_step())

    def low_precision(self, inputs):
        return inputs.to(self.low_dtype) if self.low_dtype and inputs.is_floating_point() \
            else inputs

    def model_weights(self):
        from deepspeed.utils import safe_get_full_fp32_param
        if not self.low_dtype:
            return [(p if self.zero_stage == 0 else safe_get_full_fp32_param(p)).detach().clone()
                    for p in self.parameters]
        if self.zero_stage == 3:
            with self.deepspeed.zero.GatheredParameters(self.parameters):
                return [p.detach().clone() for p in self.parameters]
        return [p.detach().clone() for p in self.parameters]

    def full_gradient(self, p):
        from deepspeed.utils import safe_get_full_grad
        if self.zero_stage == 0:
            return p.grad
        try:
            return safe_get_full_grad(p)
        except RuntimeError as error:
            # Measured with 0.19.8: a GPT at ZeRO 2 on 2 ranks with round_robin_gradients, where
            # get_full_hp_grad copies fragments of different sizes; the training itself equals
            # the run without round_robin_gradients (parameters identical after 3 steps).
            if self.round_robin and self.zero_stage <= 2:
                raise GradientsUnreadable(
                    f"DeepSpeed {self.deepspeed.__version__}'s safe_get_full_grad cannot "
                    f"assemble the full gradients with round_robin_gradients on "
                    f"{self.world_size} ranks ({error})") from error
            raise

    def snapshot_gradients(self, through_engine):
        """The gradients the coming update uses, and whether it goes through engine.step()."""
        with self.timer.untimed(), self.harness_record():
            self.take_gradients()
        self.pending["through_engine"] = through_engine

    def take_gradients(self):
        pending, engine = self.pending, self.engine
        # What the update will use: the rate now (a scheduler steps after it), the loss scale
        # the window's gradients carry (1 without fp16), the skips so far.
        pending["lr"] = float(inner_optimizer(self.optimizer).param_groups[0]["lr"])
        pending["loss_scale"] = float(getattr(engine.optimizer, "cur_scale", 1.0) or 1.0)
        pending["skipped_before"] = int(getattr(engine, "skipped_steps", 0))
        # At stage 0 p.grad holds what backward produced, and the mixed-precision wrapper divides
        # it by cur_scale before the update: the gradient the update uses is p.grad / cur_scale,
        # which is what trainrepro records (unscaled, as its own engine does). DeepSpeed 0.18.2
        # scales a bf16 loss by 65536 and unscales it here; 0.18.3-0.18.5 unscale by 65536 a
        # loss never scaled (#7837), which this shows as gradients 65536 times too small.
        unscale = pending["loss_scale"] if self.zero_stage == 0 else 1.0
        pending["gradients"] = [g.detach().clone().float() / unscale if g is not None else
                                torch.zeros_like(p) for p, g in
                                ((p, self.full_gradient(p)) for p in self.parameters)]
        pending["micro_step"] = self.backwards

    def record_step(self):
        pending, record = self.pending, self.record
        if pending["gradients"] is None:
            raise RuntimeError("the optimizer stepped where the oracle did not expect it")
        with self.timer.untimed(), self.harness_record():
            gradients = pending["gradients"]
            norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in gradients)))
            recorded = len(record["steps"]) < self.steps_recorded
            record["steps"].append({
                "micro_step": pending["micro_step"],
                "through_engine": pending["through_engine"],
                "gradient_norm": norm,
                "recorded": recorded,
                "gradients": gradients if recorded else [],
                "parameters": self.model_weights() if recorded else [],
                "lr": pending["lr"],
                "loss_scale": pending["loss_scale"],
                "skipped": int(getattr(self.engine, "skipped_steps", 0)) >
                pending["skipped_before"],
            })
            pending["gradients"] = None
            del gradients

    def after_micro_step(self):
        """After the loop's step calls: a step taken through engine.step() is recorded now."""
        if self.after_engine_step and self.pending["gradients"] is not None:
            self.record_step()
        self.pending["gradients"] = None


def backward_as_the_trainer_does(engine, trainer, loss, window, window_ends, loss_scaling):
    """The Hugging Face Trainer's backward (ds_worker's job["trainer"])."""
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


def step_as_the_trainer_does(engine, trainer, recorder, window_ends):
    # engine.step() only at the window's end with 1.8.0+; after every backward before, where
    # DeepSpeed's own micro-step counter decides whether the optimizer steps.
    if window_ends or not trainer["explicit_boundary"]:
        if engine.is_gradient_accumulation_boundary():
            recorder.snapshot_gradients(through_engine=True)
        engine.step()


def step_as_the_loop_does(engine, optimizer, recorder, loop, window_ends, managed):
    """The user's own stepping habit (loop.stepping, loop.zero_grad "never"), after a backward."""
    stepping = loop.get("stepping", "every_micro_step")
    if stepping == "every_micro_step":
        if loop.get("zero_grad", "boundary") == "never":
            # Steps the optimizer itself at the end of each window.
            if window_ends:
                recorder.snapshot_gradients(through_engine=False)
                optimizer.step()
        else:
            # Unmanaged accumulation (0.19.4+): every step() is the boundary, and
            # is_gradient_accumulation_boundary() is True only while step() runs.
            if engine.is_gradient_accumulation_boundary() or not managed:
                recorder.snapshot_gradients(through_engine=True)
            engine.step()
    elif stepping == "once_per_window":
        if window_ends:
            if engine.is_gradient_accumulation_boundary():
                recorder.snapshot_gradients(through_engine=True)
            engine.step()
    elif stepping == "optimizer_every_micro_step":
        recorder.snapshot_gradients(through_engine=False)
        optimizer.step()
        optimizer.zero_grad()
    else:
        raise ValueError(f"unknown stepping habit {stepping!r}")


def run(job, rank, world_size, record, make_memory_probe=None, engines=None):
    """Trains JOB on this rank, filling RECORD. With make_memory_probe (memory_census.MemoryCensus,
    called with a function that lists the worker's own tensors), memory is sampled where the
    reference engine's probes sample, and RECORD["memory"] holds the samples and what is alive.
    ENGINES: see initialize_engine."""
    import deepspeed
    from deepspeed.utils import logger as ds_logger
    ds_logger.setLevel(logging.WARNING)
    record["deepspeed_version"] = deepspeed.__version__
    deepspeed.init_distributed(dist_backend="gloo")

    initialized = initialize_engine(deepspeed, job, world_size, record, engines)
    if initialized is None:
        return
    module, names, engine, optimizer, lr_scheduler = initialized
    golden = job.get("golden")
    gas = engine.gradient_accumulation_steps()
    micro_batch = engine.train_micro_batch_size_per_gpu()
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
    record["parameter_names"] = names
    record["steps"] = []
    record["micro_step_losses"] = []
    record["micro_step_items"] = []
    recorder = StepRecorder(deepspeed, job, engine, optimizer, record, steps_recorded,
                            world_size)
    low_precision = recorder.low_precision

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

    memory = WorkerMemory(make_memory_probe, record, recorder.pending, source)
    harness_record = recorder.harness_record = memory.harness_record
    timer = recorder.timer

    trainer = job.get("trainer")
    zero_grad = loop.get("zero_grad", "boundary")
    loss_scaling = loop.get("loss_scaling", "engine")
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
                backward_as_the_trainer_does(engine, trainer, loss, window, window_ends,
                                             loss_scaling)
            elif loss_scaling == "none":
                loss.backward()
            else:
                engine.backward(loss)
        recorder.backwards += 1
        with harness_record():
            record["micro_step_losses"].append(float(loss_sum.detach()) / batch.items)
            record["micro_step_items"].append(int(batch.items))
        if keeper:
            kept.append(keeper(loss, outputs))

        if trainer:
            step_as_the_trainer_does(engine, trainer, recorder, window_ends)
        else:
            step_as_the_loop_does(engine, optimizer, recorder, loop, window_ends, managed)
        recorder.after_micro_step()
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
