#!/usr/bin/env python3
"""The Hugging Face Trainer oracle: trainrepro's Trainer scenarios against the real Trainer.

trainrepro models the loop of transformers' Trainer under accelerate and DeepSpeed
(harness/scenario/hf_trainer_release.h): who decides the accumulation boundary, how the loss is
divided. This program asks the real stack: transformers 5.24.0, the scenario's accelerate release
and DeepSpeed 0.19.8 (tests/deepspeed_oracle/install_hf_trainer.sh puts them in the cache), on the
CPU (DS_ACCELERATOR=cpu, gloo, one process per rank), with the scenario's zoo model built from its
options (nothing is downloaded) and the golden's initial weights and samples:

  scenario --trainrepro BIN FILE...
      `trainrepro run FILE` first; then `Trainer(model, TrainingArguments(deepspeed=<the
      scenario's config, verbatim, "auto" and all>, ...)).train()` with the scenario's
      TrainingArguments (per_device_train_batch_size, gradient_accumulation_steps, learning_rate,
      betas, eps, weight_decay, max_grad_norm, max_steps = golden steps), a sequential sampler
      (rank r then feeds micro-step m the samples [(m*W + r)*MB, ...), as trainrepro does), and a
      constant learning rate (trainrepro's hf_trainer has no lr_scheduler_type; the Trainer's
      default is linear decay). The gradients DeepSpeed holds at each boundary and the parameters
      after each optimizer step are read around DeepSpeedEngine.step, and judged exactly as the
      DeepSpeed oracle judges its own runs (oracle.py judge_training / judge_config_error): a
      `pass` matches the golden at every step, a diagnosis leaves it where trainrepro's run does
      and equals the hypothesis's prediction, a config error is DeepSpeed's own.
  worker JOB.json
      one rank (started by the above).

The model: the zoo module wrapped so that forward(inputs, labels, ...) returns {"loss": ...}. For
token data it accepts **kwargs, so the Trainer passes num_items_in_batch and the loss is the
summed token loss over it (a causal LM's ForCausalLMLoss); with token_normalisation
"per_micro_batch", or for sample data, it takes no loss kwargs and returns the micro-batch mean,
which the Trainer divides by its window.

Exit code: 0 agree, 1 disagree, 3 undecided, 77 skipped (the installed accelerate is not the
scenario's release). Run through tests/deepspeed_oracle/real-trainer, which picks the cache of the
scenario's accelerate release and skips when it is not installed.
"""
import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time
import traceback

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import torch  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import oracle  # noqa: E402
import zoo  # noqa: E402

TRANSFORMERS_VERSION = "5.24.0"
DEFAULT_ACCELERATE = "1.15.0"


def accelerate_version_of(scenario):
    return scenario.get("hf_trainer", {}).get("accelerate_version", DEFAULT_ACCELERATE)


def in_scope(scenario):
    """Trainer scenarios the real Trainer 5.24.0 can run as they stand: not those whose loop
    habits model an older transformers release's loss scaling (catalogue: 4.46.0, 4.48), no fp16
    (this CPU has none), the DeepSpeed release installed."""
    if "hf_trainer" not in scenario:
        return False, "no hf_trainer section"
    if scenario.get("deepspeed_version", oracle.DEEPSPEED_VERSION) != oracle.DEEPSPEED_VERSION:
        return False, f"names DeepSpeed {scenario['deepspeed_version']}"
    if scenario.get("loop", {}).get("loss_scaling", "engine") != "engine":
        return False, "its loss_scaling habit models an older transformers release"
    fp16 = scenario.get("deepspeed", {}).get("fp16")
    enabled = fp16.get("enabled", False) if isinstance(fp16, dict) else False
    if scenario["hf_trainer"].get("fp16") or enabled is True:  # "auto" follows hf_trainer
        return False, "fp16 (DeepSpeed refuses it on this CPU)"
    return True, ""


# --- one rank ---------------------------------------------------------------------------------
class GradientsUnreadable(RuntimeError):
    """DeepSpeed trained, but its accessor could not give the oracle the full gradients."""


class TrainerModel(torch.nn.Module):
    """The zoo module as a Trainer model: the loss comes out of forward."""

    def __init__(self, inner, per_micro_batch):
        super().__init__()
        self.inner = inner
        self.per_micro_batch = per_micro_batch

    def loss_of(self, inputs, targets, mask, num_items_in_batch=None):
        outputs = self.inner(inputs)
        batch = zoo.Batch(inputs, targets, mask)
        loss_sum = self.inner.loss_sum(outputs.float(), batch)
        if num_items_in_batch is None or self.per_micro_batch:
            return {"loss": loss_sum / batch.items}
        return {"loss": loss_sum / num_items_in_batch}


class TokenModel(TrainerModel):
    # **kwargs: the Trainer sets model_accepts_loss_kwargs and passes num_items_in_batch.
    def forward(self, inputs, labels, targets, mask=None, **kwargs):
        return self.loss_of(inputs, targets, mask, kwargs.get("num_items_in_batch"))


class MeanModel(TrainerModel):
    # No loss kwargs: training_step divides the returned mean by its window.
    def forward(self, inputs, labels, targets, mask=None):
        return self.loss_of(inputs, targets, mask)


class SampleDataset(torch.utils.data.Dataset):
    def __init__(self, source, count):
        self.batch = source.samples(0, count)

    def __len__(self):
        return self.batch.inputs.shape[0]

    def __getitem__(self, i):
        item = {"inputs": self.batch.inputs[i], "targets": self.batch.targets[i]}
        if self.batch.mask is not None:
            item["mask"] = self.batch.mask[i]
            # What the Trainer counts for num_items_in_batch: labels that are not -100.
            item["labels"] = self.batch.targets[i].masked_fill(~self.batch.mask[i], -100)
        else:
            item["labels"] = self.batch.targets[i]
        return item


def training_arguments(job, output_dir):
    from transformers import TrainingArguments
    hf = job["hf_trainer"]
    kwargs = dict(output_dir=output_dir, deepspeed=job["deepspeed"], max_steps=job["steps"],
                  per_device_train_batch_size=hf.get("per_device_train_batch_size", 8),
                  gradient_accumulation_steps=hf.get("gradient_accumulation_steps", 1),
                  train_sampling_strategy="sequential", lr_scheduler_type="constant",
                  optim="adamw_torch", report_to="none", save_strategy="no", disable_tqdm=True,
                  remove_unused_columns=False, dataloader_num_workers=0, seed=0)
    for key in ("learning_rate", "adam_beta1", "adam_beta2", "adam_epsilon", "weight_decay",
                "max_grad_norm", "warmup_steps", "bf16"):
        if key in hf:
            kwargs[key] = hf[key]
    return TrainingArguments(**kwargs)


def use_the_ranks_group_as_a_gpu_launch_would(world_size):
    """A GPU launch gets ("nccl", MULTI_GPU) from accelerate's PartialState._prepare_backend; on
    this CPU (no device backend, and cpu=False so that DeepSpeed stays enabled) it gets no backend
    and then counts one process, so the Trainer would fill train_batch_size for one rank and
    accelerate would not shard the dataloader. Plumbing only: the ranks' gloo group stands for a
    GPU run's nccl one (as MULTI_CPU, which reads the group's size and rank)."""
    if world_size == 1:
        return
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType
    original = PartialState._prepare_backend

    def prepare_backend(self, cpu=False, sagemaker_dp=False, backend=None):
        found, kind = original(self, cpu, sagemaker_dp, backend)
        if found is None and not cpu:
            return "gloo", DistributedType.MULTI_CPU
        return found, kind

    PartialState._prepare_backend = prepare_backend


def run_rank(job, rank, world_size, record):
    import deepspeed
    import transformers
    import accelerate
    from deepspeed.runtime.engine import DeepSpeedEngine
    from deepspeed.utils import safe_get_full_fp32_param, safe_get_full_grad
    from loop_pieces import optimizer_description
    record["versions"] = {"transformers": transformers.__version__,
                          "accelerate": accelerate.__version__, "deepspeed": deepspeed.__version__}
    record["deepspeed_version"] = deepspeed.__version__
    # gloo, as the DeepSpeed oracle: accelerate initialises nothing when a group exists.
    deepspeed.init_distributed(dist_backend="gloo")

    golden = job.get("golden")
    if golden:
        from safetensors.torch import load_file
        tensors = load_file(golden["file"])
        names = golden["parameters"]
        inner = zoo.build_model(job["model"], names, {n: tensors[f"init/{n}"] for n in names},
                                torch.float32)
        data = job["data"]
    else:  # a config trainrepro says is refused: the model's own initialisation
        torch.manual_seed(job["model"].get("seed", 0))
        inner = zoo.build_model_with_defaults(job["model"])
        data = zoo.data_with_defaults(job["data"])
    source = zoo.SampleSource(data)
    tokens = data["name"] == "token_sequences"
    per_micro_batch = job["loop"].get("token_normalisation", "whole_batch") == "per_micro_batch"
    model = (TokenModel if tokens and not per_micro_batch else MeanModel)(inner, per_micro_batch)
    parameters = zoo.trainable(inner)

    hf = job["hf_trainer"]
    window = hf.get("gradient_accumulation_steps", 1)
    micro = hf.get("per_device_train_batch_size", 8)
    dataset = SampleDataset(source, job["steps"] * window * micro * world_size)

    record["steps"], record["backwards"] = [], []
    state = {"backwards": 0, "engine": None, "pending": None}

    def describe_engine(engine):
        record["engine"] = {
            "train_batch_size": engine.train_batch_size(),
            "train_micro_batch_size_per_gpu": engine.train_micro_batch_size_per_gpu(),
            "gradient_accumulation_steps": engine.gradient_accumulation_steps(),
            "world_size": getattr(engine, "dp_world_size", world_size),
            "gradient_clipping": engine.gradient_clipping(),
            "zero_stage": engine.zero_optimization_stage(),
            "optimizer": optimizer_description(engine.optimizer),
            "trainer_gradient_accumulation_steps": window,
        }

    original_backward, original_step = DeepSpeedEngine.backward, DeepSpeedEngine.step

    def backward(engine, loss, *args, **kwargs):
        if record.get("engine") is None:
            describe_engine(engine)
        # What the Trainer and accelerate hand DeepSpeed: scale_wrt_gas, and the boundary
        # accelerate set before this backward (None: DeepSpeed's own counter decides).
        record["backwards"].append({"scale_wrt_gas": kwargs.get("scale_wrt_gas", True),
                                    "explicit_boundary": engine._is_gradient_accumulation_boundary})
        result = original_backward(engine, loss, *args, **kwargs)
        state["backwards"] += 1
        return result

    def step(engine, *args, **kwargs):
        boundary = engine.is_gradient_accumulation_boundary()
        zero_stage = engine.zero_optimization_stage()
        if boundary:
            try:
                gradients = [(p.grad if zero_stage == 0 else safe_get_full_grad(p))
                             for p in parameters]
            except RuntimeError as error:  # the oracle's reading, not the training, failed
                raise GradientsUnreadable(
                    f"DeepSpeed's safe_get_full_grad cannot assemble the gradients at ZeRO stage "
                    f"{zero_stage} with this config ({error})") from error
            state["pending"] = {"micro_step": state["backwards"], "through_engine": True,
                                "gradients": [g.detach().clone().float() if g is not None
                                              else torch.zeros_like(p)
                                              for p, g in zip(parameters, gradients)]}
        result = original_step(engine, *args, **kwargs)
        if boundary:
            pending = state["pending"]
            pending["gradient_norm"] = float(torch.sqrt(sum((g.double() ** 2).sum()
                                                            for g in pending["gradients"])))
            pending["parameters"] = [(p if zero_stage == 0 else safe_get_full_fp32_param(p))
                                     .detach().clone() for p in parameters]
            record["steps"].append(pending)
        return result

    DeepSpeedEngine.backward, DeepSpeedEngine.step = backward, step
    use_the_ranks_group_as_a_gpu_launch_would(world_size)
    from transformers import Trainer
    output_dir = tempfile.mkdtemp(prefix=f"real-trainer-rank{rank}-")
    try:
        trainer = Trainer(model=model, args=training_arguments(job, output_dir),
                          train_dataset=dataset)
        trainer.train()
    except Exception as exception:  # what DeepSpeed (or the Trainer) says
        where = "error" if record["backwards"] else "initialize_error"
        record[where] = {"type": type(exception).__name__, "message": str(exception),
                         "traceback": traceback.format_exc()}
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)
    record.setdefault("initialize_error", None)


def command_worker(job_file):
    job = json.loads(pathlib.Path(job_file).read_text())
    torch.set_num_threads(1)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    record = {"rank": rank, "world_size": world_size, "error": None, "engine": None}
    try:
        run_rank(job, rank, world_size, record)
    except Exception as exception:
        record["error"] = oracle_error(exception)
    torch.save(record, f"{job['out']}.rank{rank}.pt")
    try:
        import deepspeed.comm as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass
    return 0


def oracle_error(exception):
    return {"type": type(exception).__name__, "message": str(exception),
            "traceback": traceback.format_exc()}


# --- one scenario -----------------------------------------------------------------------------
def check_scenario(path, trainrepro, workdir, timeout):
    path = pathlib.Path(path).resolve()
    scenario = json.loads(path.read_text())
    scope, why = in_scope(scenario)
    if not scope:
        return oracle.SKIPPED, why
    import accelerate
    wanted = accelerate_version_of(scenario)
    if accelerate.__version__ != wanted:
        return oracle.SKIPPED, (f"the scenario names accelerate {wanted}; this environment has "
                                f"{accelerate.__version__}")
    work = workdir / scenario["name"]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results, _ = oracle.run_trainrepro(trainrepro, path, work / "results")
    job = {"deepspeed": scenario["deepspeed"], "hf_trainer": scenario["hf_trainer"],
           "model": scenario["model"], "data": scenario["data"],
           "loop": scenario.get("loop", {}), "steps": scenario["golden"]["steps"]}
    outcome = scenario["expect"]["outcome"]
    tensors = names = source = model = None
    if outcome != "config_error":
        training = results.get("training")
        if not training or not training.get("golden_file"):
            return oracle.ERROR, (f"trainrepro's results have no golden (outcome "
                                  f"{results.get('outcome')}: {results.get('found')})")
        golden_path = (oracle.ROOT / training["golden_file"]).resolve()
        tensors, key, names = oracle.load_golden(golden_path)
        source, model = oracle.self_check(key, names, tensors)
        job.update(model=key["model"], data=key["data"],
                   golden={"file": str(golden_path), "parameters": names})
    records = oracle.run_deepspeed(job, scenario.get("world_size", 1), work, timeout,
                                   worker=[str(HERE / "real_trainer.py"), "worker"])
    rank0 = records[0]
    for record in records[1:]:
        for key in ("error", "initialize_error"):
            if record.get(key) and not rank0.get(key):
                rank0 = dict(rank0, **{key: record[key]})
    handed = rank0.get("backwards", [])
    said = ""
    if handed:
        boundary = sum(b["explicit_boundary"] is not None for b in handed)
        said = (f" [accelerate {rank0['versions']['accelerate']}: {boundary} of {len(handed)} "
                f"backwards with an explicit boundary, scale_wrt_gas="
                f"{sorted({b['scale_wrt_gas'] for b in handed})}]")
    unreadable = (rank0.get("error") or {}).get("type") == "GradientsUnreadable"
    if unreadable:
        return oracle.ERROR, rank0["error"]["message"] + said
    if outcome == "config_error":
        verdict, reason = oracle.judge_config_error(scenario, results, rank0)
    else:
        if rank0.get("engine") is None and not rank0.get("error") and not rank0.get("initialize_error"):
            return oracle.ERROR, "the Trainer never called DeepSpeed's backward"
        verdict, reason = oracle.judge_training(scenario, results, rank0, tensors, names, source,
                                                model)
    return verdict, reason + said


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["scenario", "worker"])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--trainrepro", default=os.environ.get(
        "TRAINREPRO_BIN", str(pathlib.Path(os.environ.get("TRAINREPRO_BUILD", oracle.ROOT / "build"))
                              / "trainrepro")))
    parser.add_argument("--work", help="keep every run's files in this folder")
    parser.add_argument("--rank-timeout", type=float, default=900.0)
    args = parser.parse_intermixed_args()
    if args.command == "worker":
        return command_worker(args.files[0])
    torch.set_num_threads(1)
    if not os.access(args.trainrepro, os.X_OK):
        print(f"real_trainer: {args.trainrepro} is not built (scripts/build)", file=sys.stderr)
        return 3
    workdir = pathlib.Path(args.work or tempfile.mkdtemp(prefix="trainrepro-real-trainer-"))
    counts = {oracle.AGREE: 0, oracle.DISAGREE: 0, oracle.ERROR: 0, oracle.SKIPPED: 0}
    for path in args.files:
        started = time.time()
        try:
            verdict, reason = check_scenario(path, args.trainrepro, workdir, args.rank_timeout)
        except Exception as exception:  # the oracle could not decide
            verdict, reason = oracle.ERROR, f"{type(exception).__name__}: {exception}"
        counts[verdict] += 1
        print(f"{verdict:<9} {os.path.relpath(path, oracle.ROOT)} ({time.time() - started:.1f} s): "
              f"{reason}", flush=True)
    if not args.work:
        shutil.rmtree(workdir, ignore_errors=True)
    decided = len(args.files) - counts[oracle.SKIPPED]
    print(f"real Trainer: {counts[oracle.AGREE]} of {decided} agree ({counts[oracle.DISAGREE]} "
          f"disagree, {counts[oracle.ERROR]} undecided, {counts[oracle.SKIPPED]} skipped)", flush=True)
    if counts[oracle.SKIPPED] == len(args.files):
        return oracle.EXIT_SKIPPED
    return 3 if counts[oracle.ERROR] else (1 if counts[oracle.DISAGREE] else 0)


if __name__ == "__main__":
    sys.exit(main())
