#!/usr/bin/env python3
"""The DeepSpeed oracle: checks trainrepro's expectations against the real DeepSpeed engine.

trainrepro's reference engine *claims* DeepSpeed's semantics. This program asks DeepSpeed itself
(deepspeed==0.19.8 from PyPI, DS_ACCELERATOR=cpu, gloo, one process per rank):

  scenario FILE...  For each scenario: `trainrepro run FILE --results DIR` first (its results
                    name the golden, the resolved plan, its per-step comparison and diagnosis),
                    then the same training through deepspeed.initialize / engine.backward /
                    engine.step with the golden's initial weights and samples in float32, and:
                    - "pass": every compared step's gradients (before clipping) and parameters
                      match the golden within float32 tolerance;
                    - "diagnosis": DeepSpeed's gradients leave the golden at the step trainrepro
                      says, equal the named hypothesis's prediction (recomputed here in float64
                      from DeepSpeed's own parameters), and agree with trainrepro's own run
                      (norm ratio, cosine and worst element against the golden);
                    - "config_error": DeepSpeed refuses (in deepspeed.initialize, or a refused
                      habit in the loop's first step) with the message trainrepro printed.
                    In every case DeepSpeed's resolved plan (batch keys, world size, clipping,
                    optimizer hyperparameters) must equal trainrepro's, and every optimizer step
                    come after as many backward passes as trainrepro's results say.
  batch-table       DeepSpeed's own DeepSpeedConfig on a generated table of batch configurations
                    against `trainrepro config resolve FILE --world-size N`, case for case.
  prepare           imports DeepSpeed and compiles its CPU ops (FusedAdam, shared-memory
                    communication) once, timed.
  all               every scenario in scope (scenarios/accumulation/*.json and the ZeRO stage-0
                    ones under scenarios/zero/), then the batch table; prints agreement figures.
  list              the scenario files in scope.

Exit code: 0 everything agrees, 1 a disagreement, 3 the oracle could not decide (infrastructure),
77 every scenario given was skipped (it names another DeepSpeed release than the installed one).
Run it through tests/deepspeed_oracle/oracle, which sets PYTHONPATH and the DeepSpeed environment.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WORKER = ROOT / "python" / "trainrepro_worker"  # zoo and loop, shared with the engine and export
sys.path.insert(0, str(WORKER))
import zoo  # noqa: E402

FLOAT32_TOLERANCE = (1.3e-6, 1e-5)  # torch.testing.assert_close's, as trainrepro's float32 default
HYPOTHESIS_THRESHOLD = 1e-4  # a float32 run reproduces a hypothesis to ~1e-6 relative
AGREE, DISAGREE, ERROR, SKIPPED = "agree", "DISAGREE", "ERROR", "skipped"
EXIT_SKIPPED = 77  # CTest's SKIP_RETURN_CODE for the scenario tests
# The DeepSpeed release the oracle installs (deepspeed_env.sh): release scenarios of others are out of scope.
DEEPSPEED_VERSION = "0.19.8"


def installed_deepspeed_version():
    import importlib.metadata
    return importlib.metadata.version("deepspeed")


# --- scenarios in scope ----------------------------------------------------------------------
def zero_stage_of(scenario):
    section = scenario.get("deepspeed", {}).get("zero_optimization")
    if isinstance(section, bool):  # the legacy form: true is stage 1
        return 1 if section else 0
    return section.get("stage", 0) if isinstance(section, dict) else 0


# Diagnoses of trainrepro's ZeRO judge (model states, traffic, memory kept by the loop): the
# oracle compares gradients and parameters, which these leave as the golden's.
ZERO_JUDGE_DIAGNOSES = {"gathered_parameters_kept", "model_states_differ_from_zero",
                        "traffic_differs_from_zero"}


def fp16_enabled(scenario):
    fp16 = scenario.get("deepspeed", {}).get("fp16")
    return isinstance(fp16, dict) and bool(fp16.get("enabled"))


def trains_under_zero_here(scenario):
    """Whether DeepSpeed can train the scenario at ZeRO stages 1-3 on this CPU as the oracle
    drives it: the config's optimizer or the client's (not hf_trainer: the oracle does not run
    the Trainer), not Lamb (FusedLamb has no CPU kernel), and an expectation about gradients and
    parameters, not one of the ZeRO judge's."""
    if scenario.get("expect", {}).get("diagnosis") in ZERO_JUDGE_DIAGNOSES:
        return False
    config = scenario.get("deepspeed", {})
    optimizer = config.get("optimizer", {}).get("type", "") if isinstance(config.get("optimizer"), dict) else ""
    return "hf_trainer" not in scenario and optimizer.lower() != "lamb"


def scenarios_in_scope():
    """The same list as oracle_tests.cmake: the scenarios of these folders written for the
    installed release, except fp16 ones (this CPU has no fp16: DeepSpeed refuses it) and
    Hugging Face Trainer ones (the oracle does not run the Trainer): a refused
    config at any ZeRO stage, training at stage 0, and training at stages 1-3 where
    trains_under_zero_here allows it. bf16 runs are judged against trainrepro's precision twin."""
    files = []
    for folder in ("accumulation", "zero", "deepspeed-versions", "schedulers", "checkpointing",
                   "frozen", "parameter-groups", "precision", "hf-trainer"):
        for path in sorted((ROOT / "scenarios" / folder).glob("*.json")):
            scenario = json.loads(path.read_text())
            if scenario.get("deepspeed_version", DEEPSPEED_VERSION) != DEEPSPEED_VERSION:
                continue
            if "hf_trainer" in scenario:  # its config holds "auto": the Trainer fills it
                continue
            if fp16_enabled(scenario):
                continue
            if (zero_stage_of(scenario) == 0 or scenario["expect"].get("outcome") == "config_error"
                    or trains_under_zero_here(scenario)):
                files.append(path)
    return files


# --- running things --------------------------------------------------------------------------
# The port and the /dev/shm clean-up of DeepSpeed's CPU all-reduce buffers, as the engine worker
# (`run --engine deepspeed`) does them.
from deepspeed_engine_worker import free_port, remove_shared_memory_buffers  # noqa: E402


def run_deepspeed(job, world_size, workdir, timeout, worker=None):
    """Runs ds_worker.py (or `worker`: the program and its arguments before the job file, as
    real_trainer.py's) on `world_size` ranks; returns each rank's record (or raises)."""
    job = dict(job, out=str(workdir / "ds"))
    job_file = workdir / "job.json"
    job_file.write_text(json.dumps(job))
    port = free_port()
    processes, logs = [], []
    for rank in range(world_size):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                   LOCAL_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        log = open(workdir / f"rank{rank}.log", "w")
        logs.append(log)
        program = worker or [str(WORKER / "ds_worker.py")]
        processes.append(subprocess.Popen([sys.executable, *program, str(job_file)],
                                          env=env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
    deadline = time.time() + timeout
    timed_out = False
    for process in processes:
        try:
            process.wait(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            timed_out = True
            break
    if timed_out:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    for log in logs:
        log.close()
    remove_shared_memory_buffers(port)
    records = []
    for rank in range(world_size):
        path = workdir / f"ds.rank{rank}.pt"
        if not path.exists():
            tail = (workdir / f"rank{rank}.log").read_text()[-3000:]
            why = f"timed out after {timeout} s" if timed_out else \
                f"exited with {processes[rank].returncode}"
            raise RuntimeError(f"DeepSpeed rank {rank} of {world_size} {why} without a record; "
                               f"its output ends:\n{tail}")
        records.append(torch.load(path, weights_only=False))
    return records


def run_trainrepro(trainrepro, scenario_path, results_dir):
    started = time.time()
    # TRAINREPRO_ORACLE_GOLDEN_DIR: goldens of scenarios kept outside the repository (unshipped
    # varieties checked by hand), so that checking them leaves golden/ untouched.
    golden_dir = os.environ.get("TRAINREPRO_ORACLE_GOLDEN_DIR", "golden")
    completed = subprocess.run([trainrepro, "run", str(scenario_path), "--results", str(results_dir),
                                "--golden-dir", golden_dir],
                               cwd=ROOT, capture_output=True, text=True, timeout=1200)
    name = json.loads(pathlib.Path(scenario_path).read_text())["name"]
    path = pathlib.Path(results_dir) / f"{name}.json"
    if not path.exists():
        raise RuntimeError(f"trainrepro run exited {completed.returncode} without results:\n"
                           f"{completed.stdout[-2000:]}{completed.stderr[-2000:]}")
    return json.loads(path.read_text()), time.time() - started


# --- comparisons -------------------------------------------------------------------------------
def compare(actual, expected, rtol, atol, allowance=None):
    """trainrepro's rule |a-b| <= atol + rtol*|b| (+ allowance), in float64, with its statistics."""
    a, b = actual.double(), expected.double()
    error = (a - b).abs()
    allowed = b.abs() * rtol + atol
    if allowance is not None:
        allowed = allowed + allowance
    used = error / allowed
    worst = int(used.reshape(-1).argmax())
    an, bn = float(a.norm()), float(b.norm())
    return {
        "within": bool((error <= allowed).all()) and bool(torch.isfinite(a).all()),
        "max_abs_error": float(error.max()) if error.numel() else 0.0,
        "used": float(used.reshape(-1)[worst]) if used.numel() else 0.0,
        "worst_index": [int(i) for i in torch.unravel_index(torch.tensor(worst), b.shape)],
        "worst_actual": float(a.reshape(-1)[worst]), "worst_expected": float(b.reshape(-1)[worst]),
        "norm_ratio": an / bn if bn > 0 else (1.0 if an == 0 else float("inf")),
        "cosine": float((a * b).sum()) / (an * bn) if an > 0 and bn > 0 else (1.0 if an == bn else 0.0),
    }


def relative_error(observed, predicted):
    num = sum(float(((o.double() - p.double()) ** 2).sum()) for o, p in zip(observed, predicted))
    den = sum(float((p.double() ** 2).sum()) for p in predicted)
    return (num ** 0.5) / max(den ** 0.5, 1e-300)


def describe(name, c):
    index = ",".join(str(i) for i in c["worst_index"])
    return (f"{name}[{index}]: {c['worst_actual']:.6g} vs golden {c['worst_expected']:.6g} "
            f"(max abs error {c['max_abs_error']:.3g}, {100 * c['used']:.3g}% of tolerance, "
            f"norm ratio {c['norm_ratio']:.6g}, cosine {c['cosine']:.6g})")


class AdamAllowance:
    """trainrepro's parameter allowance for Adam-type optimizers (harness/verdict/judge_training):
    each step adds lr * min(2, 4|dg|/(|g|+eps)), with dg the gradient difference measured."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.applies = optimizer["type"].lower() != "sgd"
        self.allowance = None

    def add_step(self, run, golden):
        if not self.applies:
            return
        if self.allowance is None:
            self.allowance = [torch.zeros_like(g, dtype=torch.float64) for g in golden]
        for i, (r, g) in enumerate(zip(run, golden)):
            sensitivity = ((r.double() - g.double()).abs() * 4 / (g.double().abs() + self.optimizer["eps"]))
            self.allowance[i] = self.allowance[i] + sensitivity.clamp(max=2.0) * self.optimizer["lr"]

    def of(self, i):
        return self.allowance[i] if self.applies else None


# --- plan: DeepSpeed's against trainrepro's ---------------------------------------------------------
def plan_differences(engine, plan, scheduled=False, cycles_betas=False):
    """`scheduled`: the config has a scheduler, which has already written its first rate into the
    optimizer after deepspeed.initialize; the rate of every step then shows in the parameters.
    `cycles_betas`: OneCycle has written its first betas too (cycle_min_mom, 0.99)."""
    differences = []
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                "world_size"):
        if engine[key] != plan[key]:
            differences.append(f"{key}: trainrepro {plan[key]}, DeepSpeed {engine[key]}")
    if float(engine["gradient_clipping"]) != float(plan["gradient_clipping"]):
        differences.append(f"gradient_clipping: trainrepro {plan['gradient_clipping']}, DeepSpeed "
                           f"{engine['gradient_clipping']}")
    ours, theirs = plan["optimizer"], engine["optimizer"]
    keys = ["weight_decay"] if scheduled else ["lr", "weight_decay"]
    if ours.get("parameter_groups"):
        # The script's groups: each group's weight decay, in order, instead of the config's.
        keys.remove("weight_decay")
        wanted = [float(group["weight_decay"]) for group in ours["parameter_groups"]]
        found = [float(x) for x in theirs.get("group_weight_decays", [])]
        if wanted != found:
            differences.append(f"optimizer param groups' weight_decay: trainrepro {wanted}, "
                               f"DeepSpeed {found} ({theirs['class']})")
        # Each group's own lr (the optimizer's where it names none); a scheduler has written
        # its rates by now, which the parameters of every step show instead.
        if "lr" in keys:
            keys.remove("lr")
            wanted = [float(group.get("lr", ours["lr"])) for group in ours["parameter_groups"]]
            found = theirs.get("group_lrs", [])
            if wanted != found:
                differences.append(f"optimizer param groups' lr: trainrepro {wanted}, "
                                   f"DeepSpeed {found} ({theirs['class']})")
    keys += ["momentum"] if ours["type"].lower() == "sgd" else ["eps", "decoupled_weight_decay"]
    if ours["type"].lower() != "sgd" and not cycles_betas:
        keys.append("betas")
    for key in keys:
        if key not in theirs:
            differences.append(f"optimizer {key}: DeepSpeed's {theirs['class']} has none")
            continue
        a, b = ours[key], theirs[key]
        same = [float(x) for x in a] == [float(x) for x in b] if isinstance(a, list) else \
            (a == b if isinstance(a, bool) else float(a) == float(b))
        if not same:
            differences.append(f"optimizer {key}: trainrepro {a}, DeepSpeed {b} ({theirs['class']})")
    return differences


# --- hypotheses, recomputed independently in float64 ------------------------------------------
def predict(hypothesis, model, parameters, source, engine, step, previous_gradients):
    """The gradient `hypothesis` predicts at optimizer step `step`, at DeepSpeed's own parameters
    before that step. Global micro-batch k is samples [k*MB*W, (k+1)*MB*W); the window of step s
    is micro-batches [s*GAS, (s+1)*GAS), as a correct loop consumes them."""
    gas = engine["gradient_accumulation_steps"]
    micro = engine["train_micro_batch_size_per_gpu"] * engine["world_size"]
    with torch.no_grad():
        for p, value in zip(zoo.trainable(model), parameters):
            p.copy_(value.double())
    if hypothesis == "trainer_boundary_ignored":
        # The Hugging Face Trainer before accelerate 1.8.0 (real_trainer.py): DeepSpeed's own GAS
        # makes the boundary, each micro-batch's loss normalised over the Trainer's window.
        window = engine["trainer_gradient_accumulation_steps"]
        total = None
        for m in range(step * gas, (step + 1) * gas):
            start = m // window * window
            items = source.samples(start * micro, (start + window) * micro).items
            g, _ = zoo.gradient_of_sum(model, source, m * micro, (m + 1) * micro)
            share = [x / items for x in g]
            total = share if total is None else [t + x for t, x in zip(total, share)]
        return total
    first = step * gas
    sums, items = [], []
    for k in range(gas):
        g, n = zoo.gradient_of_sum(model, source, (first + k) * micro, (first + k + 1) * micro)
        sums.append(g)
        items.append(n)
    window_items = sum(items)
    window = [sum(s[i] for s in sums) / window_items for i in range(len(sums[0]))]
    if hypothesis in ("no_accumulation", "effective_batch_differs"):
        return window
    if hypothesis == "loss_not_scaled":
        return [w * gas for w in window]
    if hypothesis == "loss_scaled_twice":
        return [w / gas for w in window]
    if hypothesis == "zeroed_inside_window":
        return [g / window_items for g in sums[-1]]
    # Both step after the window's first micro-batch with 1/GAS of its gradient (unmanaged
    # accumulation: every engine.step() is a boundary, engine.backward still divides by GAS).
    if hypothesis in ("optimizer_every_micro_step", "unmanaged_gradient_accumulation"):
        return [g / window_items for g in sums[0]]
    if hypothesis == "gradients_not_reduced":
        # The boundary's backward inside engine.no_sync(): rank 0 steps on its own micro-batches
        # (samples [(k*W)*MB, (k*W+1)*MB) of global micro-batch k), each normalised by the
        # window's items per rank, never averaged with the other ranks'.
        ranks = engine["world_size"]
        per_rank = engine["train_micro_batch_size_per_gpu"]
        own = None
        for k in range(gas):
            g, _ = zoo.gradient_of_sum(model, source, (first + k) * micro,
                                       (first + k) * micro + per_rank)
            own = g if own is None else [t + x for t, x in zip(own, g)]
        return [x * ranks / window_items for x in own]
    if hypothesis == "per_micro_batch_token_normalisation":
        return [sum(s[i] / (n * gas) for s, n in zip(sums, items)) for i in range(len(sums[0]))]
    if hypothesis == "step_once_per_window":
        total = list(window)
        for w in range(1, gas):
            g, n = zoo.gradient_of_sum(model, source, (first + w * gas) * micro,
                                       (first + (w + 1) * gas) * micro)
            total = [t + x / n for t, x in zip(total, g)]
        return total
    if hypothesis == "reentrant_checkpoint_without_input_grad":
        # Reentrant checkpoints reach no block whose input lacks history: in the MLP every
        # hidden block follows the data, so only the head (the last layer) keeps its gradient.
        # The GPT's blocks follow the embeddings: nothing is lost unless both are frozen, and
        # then only ln_f and the head keep theirs.
        if isinstance(model, zoo.Mlp):
            kept = list(model.layers[-1].parameters())
        elif not any(p.requires_grad for p in (model.token_embedding.weight,
                                               model.position_embedding.weight)):
            kept = list(model.ln_f.parameters()) + list(model.head.parameters())
        else:
            return window
        kept = {id(p) for p in kept}
        return [w if id(p) in kept else torch.zeros_like(w)
                for w, p in zip(window, zoo.trainable(model))]
    if hypothesis == "never_zeroed":
        if previous_gradients is None:
            raise ValueError("never_zeroed needs a previous step")
        return [w + p.double() for w, p in zip(window, previous_gradients)]
    raise ValueError(f"the oracle has no prediction for the diagnosis {hypothesis!r}")


# --- one scenario ------------------------------------------------------------------------------
def load_golden(path):
    from safetensors import safe_open
    from safetensors.torch import load_file
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    return load_file(str(path)), json.loads(metadata["key"]), json.loads(metadata["parameters"])


def self_check(key, names, tensors):
    """The oracle's own zoo must reproduce the golden's samples (to 1e-12) and its first step's
    gradients in float64 (to 1e-10); otherwise nothing below would mean anything."""
    source = zoo.SampleSource(key["data"])
    count = tensors["data/inputs"].shape[0]
    batch = source.samples(0, count, torch.float64)
    for what, ours in (("inputs", batch.inputs), ("targets", batch.targets), ("mask", batch.mask)):
        if f"data/{what}" not in tensors:
            continue
        theirs = tensors[f"data/{what}"]
        same = ours is not None and ours.shape == theirs.shape and ours.dtype == theirs.dtype and (
            float((ours - theirs).abs().max()) <= 1e-12 if ours.is_floating_point() else torch.equal(ours, theirs))
        if not same:  # floating-point data may differ in the last bit (BLAS summation order)
            raise RuntimeError(f"the oracle's data generator differs from the golden's data/{what}")
    model = zoo.build_model(key["model"], names, {n: tensors[f"init/{n}"] for n in names}, torch.float64)
    tb = key["train_batch_size"]
    grads, n = zoo.gradient_of_sum(model, source, 0, tb)
    for name, g in zip(names, grads):
        difference = float((g / n - tensors[f"step0/grad/{name}"]).abs().max())
        if difference > 1e-10:
            raise RuntimeError(f"the oracle's {key['model']['name']} differs from the golden's step 0 "
                               f"gradient of {name} by {difference:.3g}")
    return source, model


def pydantic_one_line(message):
    """pydantic's multi-line ValidationError as trainrepro writes it on one line:
    "1 validation error for M: loc: text [type=…]" (the "For further information" line dropped)."""
    lines = [line.strip() for line in message.splitlines()
             if line.strip() and not line.strip().startswith("For further information")]
    return ": ".join(lines)


def judge_config_error(scenario, results, rank0):
    expected = scenario["expect"].get("error")
    # DeepSpeed refuses in deepspeed.initialize, or (a refused habit) in the loop's first step.
    refusal = rank0.get("initialize_error") or rank0.get("error")
    if not refusal:
        engine = rank0.get("engine", {})
        return DISAGREE, (f"DeepSpeed accepts the config (train_batch_size "
                          f"{engine.get('train_batch_size')}, micro batch "
                          f"{engine.get('train_micro_batch_size_per_gpu')}, GAS "
                          f"{engine.get('gradient_accumulation_steps')}); trainrepro expects "
                          f"{expected}")
    message = refusal["message"].strip()
    if refusal["type"] == "ValidationError":
        message = pydantic_one_line(message)
    said = message if refusal["type"] == "AssertionError" else f"{refusal['type']}: {message}"
    where = "in deepspeed.initialize" if rank0.get("initialize_error") else "in the loop"
    trainrepro_text = " ".join(str(results.get(k) or "") for k in ("found", "diagnosis"))
    if message and (said in trainrepro_text or message in trainrepro_text):
        return AGREE, f"both refuse ({where}): {said}"
    return DISAGREE, (f"DeepSpeed refuses {where} with {refusal['type']}: {message!r}; trainrepro "
                      f"says {trainrepro_text.strip()!r}")


def agreement_with_trainrepro(ours, theirs, deepspeed_tensors, names, what_prefix, problems):
    """DeepSpeed's and trainrepro's runs depart from the golden alike, tensor by tensor: norm ratio
    and cosine against the golden, and the value at trainrepro's worst element, to
    HYPOTHESIS_THRESHOLD relative. Appends each disagreement to `problems`; returns the largest."""
    worst = 0.0
    for i, (mine, reported) in enumerate(zip(ours, theirs)):
        value = float(deepspeed_tensors[i][tuple(reported["worst_index"])])
        checks = [("norm ratio", mine["norm_ratio"], reported["norm_ratio"]),
                  ("cosine", mine["cosine"], reported["cosine"]),
                  (f"value at [{','.join(map(str, reported['worst_index']))}]", value,
                   reported["worst_actual"])]
        for what, a, b in checks:
            gap = abs(a - b) / max(abs(b), 1e-3)
            worst = max(worst, gap)
            if gap > HYPOTHESIS_THRESHOLD:
                problems.append(f"{names[i]} {what_prefix}{what}: DeepSpeed {a:.7g}, trainrepro's run {b:.7g}")
    return worst


def judge_training(scenario, results, rank0, tensors, names, source, model):
    expect = scenario["expect"]
    training = results.get("training") or {}
    golden_steps = scenario["golden"]["steps"]
    if rank0.get("initialize_error"):
        e = rank0["initialize_error"]
        return DISAGREE, f"DeepSpeed refuses the config: {e['type']}: {e['message']}"
    problems = []
    if rank0.get("error"):
        e = rank0["error"]
        return DISAGREE, (f"DeepSpeed fails in the scenario's loop: {e['type']}: "
                          f"{e['message'].splitlines()[0] if e['message'] else ''}")
    engine = rank0["engine"]
    plan = results["plan"]
    scheduler = scenario.get("deepspeed", {}).get("scheduler")
    problems += [f"plan differs: {d}" for d in plan_differences(
        engine, plan, scheduled=scheduler is not None,
        cycles_betas=bool(scheduler) and scheduler.get("type") == "OneCycle"
        and scheduler.get("params", {}).get("cycle_momentum", True))]
    steps = rank0["steps"]
    if len(steps) < golden_steps:
        return DISAGREE, f"DeepSpeed took {len(steps)} optimizer steps, {golden_steps} expected"
    if training.get("precision_twin"):
        return judge_against_twin(expect, training, steps, tensors, names, golden_steps, problems)

    rtol, atol = FLOAT32_TOLERANCE
    if "tolerance" in scenario:
        rtol, atol = scenario["tolerance"]["rtol"], scenario["tolerance"]["atol"]
    optimizer = plan["optimizer"]
    allowance = AdamAllowance(optimizer)
    first_gradient_mismatch = first_parameter_mismatch = None
    worst_used = 0.0
    parameter_problem = gradient_problem = None
    comparisons = []
    for s in range(golden_steps):
        run = steps[s]
        golden_gradients = [tensors[f"step{s}/grad/{n}"] for n in names]
        golden_parameters = [tensors[f"step{s}/param/{n}"] for n in names]
        allowance.add_step(run["gradients"], golden_gradients)
        grads = [compare(r, g, rtol, atol) for r, g in zip(run["gradients"], golden_gradients)]
        params = [compare(r, g, rtol, atol, allowance.of(i))
                  for i, (r, g) in enumerate(zip(run["parameters"], golden_parameters))]
        comparisons.append(grads)
        trainrepro_steps = training.get("steps", [])
        if s < len(trainrepro_steps) and trainrepro_steps[s]["micro_step"] != run["micro_step"]:
            problems.append(f"step {s} came after {run['micro_step']} backward passes in the DeepSpeed "
                            f"loop, trainrepro's results say {trainrepro_steps[s]['micro_step']}")
        if not all(c["within"] for c in grads) and first_gradient_mismatch is None:
            first_gradient_mismatch = s
            worst = max(range(len(grads)), key=lambda i: grads[i]["used"])
            gradient_problem = f"gradients differ from the golden at step {s}: " + describe(names[worst], grads[worst])
        if not all(c["within"] for c in params) and first_parameter_mismatch is None:
            first_parameter_mismatch = s
            worst = max(range(len(params)), key=lambda i: params[i]["used"])
            parameter_problem = (f"parameters differ from the golden after step {s}: "
                                 + describe(names[worst], params[worst]))
            clip = float(engine["gradient_clipping"])
            if clip > 0 and run["through_engine"] and run["gradient_norm"] > clip:
                parameter_problem += (f"; DeepSpeed clipped: gradient norm {run['gradient_norm']:.4g} > "
                                      f"gradient_clipping {clip:g}")
                if "gradient_clipping" not in scenario["deepspeed"]:
                    parameter_problem += f" (DeepSpeed {rank0['deepspeed_version']}'s default; the config does not set it)"
        worst_used = max([worst_used] + [c["used"] for c in grads + params])

    if expect["outcome"] == "pass":
        if gradient_problem:
            problems.append(gradient_problem)
        if parameter_problem:
            problems.append(parameter_problem)
        if problems:
            return DISAGREE, "; ".join(problems)
        return AGREE, (f"gradients and parameters match the golden at all {golden_steps} steps "
                       f"(worst {100 * worst_used:.3g}% of tolerance)")

    # A reproduction: DeepSpeed must go wrong where and as trainrepro says.
    named = expect.get("diagnosis")
    diagnosis = training.get("diagnosis") or {}
    if named in PARAMETER_DIAGNOSES:
        return judge_parameter_reproduction(named, training, steps, comparisons_of_parameters(
            steps, tensors, names, golden_steps, rtol, atol, optimizer), first_parameter_mismatch,
            first_gradient_mismatch, names, problems)
    step = diagnosis.get("step", training.get("first_gradient_mismatch"))
    if first_gradient_mismatch is None:
        problems.append(f"DeepSpeed's gradients match the golden at all {golden_steps} steps: "
                        f"{named} does not happen with DeepSpeed")
        return DISAGREE, "; ".join(problems)
    if training.get("first_gradient_mismatch") != first_gradient_mismatch:
        problems.append(f"DeepSpeed's gradients leave the golden at step {first_gradient_mismatch}, "
                        f"trainrepro's at {training.get('first_gradient_mismatch')}")
    if step is None or step >= golden_steps:
        problems.append("trainrepro's results name no diagnosed step")
        return DISAGREE, "; ".join(problems)
    before = [tensors[f"init/{n}"] for n in names] if step == 0 else steps[step - 1]["parameters"]
    previous = steps[step - 1]["gradients"] if step > 0 else None
    predicted = predict(named, model, before, source, engine, step, previous)
    error = relative_error(steps[step]["gradients"], predicted)
    if error > HYPOTHESIS_THRESHOLD:
        problems.append(f"DeepSpeed's gradient at step {step} is not {named}'s prediction "
                        f"(relative error {error:.3g})")
    # Against trainrepro's own run: the same departure from the golden, tensor by tensor.
    worst_disagreement = agreement_with_trainrepro(
        comparisons[step], training["steps"][step]["gradients"], steps[step]["gradients"], names,
        "", problems)
    if problems:
        return DISAGREE, "; ".join(problems[:6])
    return AGREE, (f"{named} at step {step}: DeepSpeed's gradient is the prediction to {error:.1e} "
                   f"and trainrepro's run to {worst_disagreement:.1e} (norm ratio "
                   f"{comparisons[step][0]['norm_ratio']:.4g} vs golden)")


def rms_error(run, golden):
    """The whole model's RMS error against the golden, all tensors as one vector (trainrepro's
    compare_model_with_twin)."""
    flat = lambda tensors: torch.cat([t.double().reshape(-1) for t in tensors])
    return float((flat(run) - flat(golden)).square().mean().sqrt())


def judge_against_twin(expect, training, steps, tensors, names, golden_steps, problems):
    """A low-precision run (bf16) cannot match the float64 golden: trainrepro judges it against
    its precision twin (the same precision without accumulation), passing when the whole
    model's RMS error is at most factor x the twin's + floor. DeepSpeed's run is held to the
    same bound, with trainrepro's twin errors: a `pass` must stay within it at every step, a
    reproduction must leave it at the step trainrepro's run does."""
    twin = training["precision_twin"]
    factor, floor = twin["factor"], twin["floor"]
    first_outside, worst = None, 0.0
    for s in range(golden_steps):
        ours = training["steps"][s]
        for kind, key in (("gradients", "grad"), ("parameters", "param")):
            error = rms_error(steps[s][kind], [tensors[f"step{s}/{key}/{n}"] for n in names])
            allowed = factor * ours[kind][0]["twin_rms_error"] + floor
            worst = max(worst, error / allowed)
            if error > allowed and first_outside is None:
                first_outside = (s, kind, error, allowed)
    if expect["outcome"] == "pass":
        if first_outside:
            s, kind, error, allowed = first_outside
            problems.append(f"DeepSpeed's {kind} at step {s}: RMS error {error:.3g} against the "
                            f"golden, above {factor:g}x the precision twin's + {floor:g} "
                            f"({allowed:.3g})")
        if problems:
            return DISAGREE, "; ".join(problems)
        return AGREE, (f"DeepSpeed's {training['precision']} run stays within {factor:g}x the "
                       f"precision twin's RMS error at all {golden_steps} steps (worst "
                       f"{100 * worst:.3g}% of the bound)")
    ours_first = training.get("first_gradient_mismatch")
    if ours_first is None:
        ours_first = training.get("first_parameter_mismatch")
    if first_outside is None:
        problems.append(f"DeepSpeed's {training['precision']} run stays within the precision "
                        f"twin's bound at every step: {expect.get('diagnosis')} does not happen "
                        "with DeepSpeed")
    elif first_outside[0] != ours_first:
        problems.append(f"DeepSpeed's run leaves the twin's bound at step {first_outside[0]}, "
                        f"trainrepro's at {ours_first}")
    if problems:
        return DISAGREE, "; ".join(problems)
    s, kind, error, allowed = first_outside
    return AGREE, (f"{expect.get('diagnosis')}: DeepSpeed's {kind} leave the precision twin's "
                   f"bound at step {s} as trainrepro's do (RMS error {error:.3g}, bound "
                   f"{allowed:.3g})")


# Diagnoses of an update that differs while the gradients before it match the golden: DeepSpeed
# must leave the golden's parameters at the step trainrepro says, the same way trainrepro's run
# does (there is no gradient prediction to test).
PARAMETER_DIAGNOSES = {"lr_scheduler_stepped_every_micro_step"}


def comparisons_of_parameters(steps, tensors, names, golden_steps, rtol, atol, optimizer):
    allowance = AdamAllowance(optimizer)
    comparisons = []
    for s in range(golden_steps):
        allowance.add_step(steps[s]["gradients"], [tensors[f"step{s}/grad/{n}"] for n in names])
        comparisons.append([compare(steps[s]["parameters"][i], tensors[f"step{s}/param/{n}"], rtol, atol,
                                    allowance.of(i)) for i, n in enumerate(names)])
    return comparisons


def judge_parameter_reproduction(named, training, steps, comparisons, first_parameter_mismatch,
                                 first_gradient_mismatch, names, problems):
    if first_parameter_mismatch is None:
        problems.append(f"DeepSpeed's parameters match the golden at every step: {named} does not "
                        "happen with DeepSpeed")
        return DISAGREE, "; ".join(problems)
    step = training.get("first_parameter_mismatch")
    if step != first_parameter_mismatch:
        problems.append(f"DeepSpeed's parameters leave the golden after step {first_parameter_mismatch}, "
                        f"trainrepro's after {step}")
        return DISAGREE, "; ".join(problems)
    if first_gradient_mismatch is not None and first_gradient_mismatch <= step:
        problems.append(f"DeepSpeed's gradients already differ at step {first_gradient_mismatch}")
    worst_disagreement = agreement_with_trainrepro(
        comparisons[step], training["steps"][step]["parameters"], steps[step]["parameters"], names,
        "parameter ", problems)
    if problems:
        return DISAGREE, "; ".join(problems[:6])
    return AGREE, (f"{named}: DeepSpeed's parameters leave the golden after step {step}, as trainrepro's "
                   f"run does (agreement {worst_disagreement:.1e}; norm ratio "
                   f"{comparisons[step][0]['norm_ratio']:.4g} vs golden)")


def check_scenario(path, trainrepro, workdir, timeout):
    path = pathlib.Path(path).resolve()
    scenario = json.loads(path.read_text())
    name = scenario["name"]
    release = scenario.get("deepspeed_version", installed_deepspeed_version())
    if release != installed_deepspeed_version():
        return SKIPPED, (f"the scenario names DeepSpeed {release}; the oracle runs "
                         f"{installed_deepspeed_version()}"), {}
    work = workdir / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    timings = {}
    results, timings["trainrepro"] = run_trainrepro(trainrepro, path, work / "results")
    world_size = scenario.get("world_size", 1)
    loop = dict(scenario.get("loop", {}))
    job = {"deepspeed": scenario["deepspeed"], "model": scenario["model"], "data": scenario["data"],
           "loop": loop, "steps": scenario["golden"]["steps"],
           "parameter_groups": scenario.get("parameter_groups"),
           "client_optimizer": scenario.get("client_optimizer")}
    outcome = scenario["expect"]["outcome"]
    source = model = tensors = names = None
    if outcome != "config_error":
        training = results.get("training")
        if not training or not training.get("golden_file"):
            return ERROR, f"trainrepro's results have no golden (outcome {results.get('outcome')}: " \
                          f"{results.get('found') or results.get('diagnosis')})", timings
        golden_path = (ROOT / training["golden_file"]).resolve()
        tensors, key, names = load_golden(golden_path)
        source, model = self_check(key, names, tensors)
        job.update(model=key["model"], data=key["data"],
                   golden={"file": str(golden_path), "parameters": names})
    started = time.time()
    records = run_deepspeed(job, world_size, work, timeout)
    timings["deepspeed"] = time.time() - started
    rank0 = records[0]
    for record in records[1:]:
        if record.get("error") and not rank0.get("error"):
            rank0 = dict(rank0, error=record["error"])
    if outcome == "config_error":
        verdict, reason = judge_config_error(scenario, results, rank0)
    else:
        verdict, reason = judge_training(scenario, results, rank0, tensors, names, source, model)
    return verdict, reason, timings


def command_scenario(args, files):
    workdir = pathlib.Path(args.work or tempfile.mkdtemp(prefix="trainrepro-oracle-"))
    counts = {AGREE: 0, DISAGREE: 0, ERROR: 0, SKIPPED: 0}
    lines = []
    for path in files:
        started = time.time()
        try:
            verdict, reason, timings = check_scenario(path, args.trainrepro, workdir, args.rank_timeout)
        except Exception as exception:  # the oracle could not decide
            verdict, reason, timings = ERROR, f"{type(exception).__name__}: {exception}", {}
        counts[verdict] += 1
        rel = os.path.relpath(path, ROOT)
        line = f"{verdict:<9} {rel} ({time.time() - started:.1f} s): {reason}"
        print(line, flush=True)
        lines.append(line)
    if not args.work and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"scenarios: {counts[AGREE]} of {len(files) - counts[SKIPPED]} agree with DeepSpeed "
          f"({counts[DISAGREE]} disagree, {counts[ERROR]} could not be decided, "
          f"{counts[SKIPPED]} skipped)", flush=True)
    return counts


# --- the batch table ---------------------------------------------------------------------------
BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
BATCH_POOLS = {"train_batch_size": [1, 2, 3, 4, 6, 7, 8, 12, 16, 24, 30, 32, 33, 48, 64, 96, 128],
               "train_micro_batch_size_per_gpu": [1, 2, 3, 4, 5, 8, 16, 17, 32],
               "gradient_accumulation_steps": [1, 2, 3, 4, 5, 8, 16]}


def batch_cases(seed=20250419):
    """The batch table (656 cases):
    - given or missing: each key absent, null or a positive value (all 27 combinations) at every
      world size 1-8, two draws each; half of the cases that give two or three keys are made
      consistent (train_batch_size = micro batch x GAS x world size), the others mostly are not,
      so that both DeepSpeed's computations and its assertions are exercised (432 cases);
    - invalid values: each key absent, positive, zero or negative (all 56 combinations with at
      least one zero or negative) at world sizes 1, 2, 3 and 8 (224 cases)."""
    rng = random.Random(seed)
    tb, mb, gas = BATCH_KEYS
    cases = []

    def add(states, world_size):
        config = {}
        for key, state in zip(BATCH_KEYS, states):
            if state == "null":
                config[key] = None
            elif state == "positive":
                config[key] = rng.choice(BATCH_POOLS[key])
            elif state == "zero":
                config[key] = 0
            elif state == "negative":
                config[key] = -rng.choice(BATCH_POOLS[key])
        positive = [k for k, s in zip(BATCH_KEYS, states) if s == "positive"]
        if tb in positive and len(positive) >= 2 and rng.random() < 0.5:
            micro = config[mb] if mb in positive else rng.choice(BATCH_POOLS[mb])
            steps = config[gas] if gas in positive else rng.choice(BATCH_POOLS[gas])
            config[tb] = micro * steps * world_size
        cases.append((config, world_size))

    given = ("absent", "null", "positive")
    for states in itertools.product(given, repeat=3):
        for world_size in range(1, 9):
            for _ in range(2):
                add(states, world_size)
    invalid = ("absent", "positive", "zero", "negative")
    for states in itertools.product(invalid, repeat=3):
        if not {"zero", "negative"} & set(states):
            continue
        for world_size in (1, 2, 3, 8):
            add(states, world_size)
    return cases


class FakeMpu:
    """DeepSpeedConfig reads the data-parallel world size from the mpu when one is given."""

    def __init__(self, world_size):
        self.world_size = world_size

    def get_data_parallel_world_size(self):
        return self.world_size

    def get_data_parallel_rank(self):
        return 0


def deepspeed_resolves(config, world_size):
    from deepspeed.runtime.config import DeepSpeedConfig
    try:
        resolved = DeepSpeedConfig(dict(config), mpu=FakeMpu(world_size))
    except Exception as exception:
        message = str(exception)
        said = message if isinstance(exception, AssertionError) else f"{type(exception).__name__}: {message}"
        return {"error": said}
    return {"train_batch_size": resolved.train_batch_size,
            "train_micro_batch_size_per_gpu": resolved.train_micro_batch_size_per_gpu,
            "gradient_accumulation_steps": resolved.gradient_accumulation_steps,
            "world_size": resolved.world_size}


def trainrepro_resolves(trainrepro, path, world_size):
    try:
        completed = subprocess.run([trainrepro, "config", "resolve", str(path), "--world-size",
                                    str(world_size)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exception:
        return None, "", f"could not run trainrepro: {exception}"
    return completed.returncode, completed.stdout, completed.stderr


def command_batch_table(args):
    import logging
    import deepspeed
    from deepspeed.utils import logger as ds_logger
    ds_logger.setLevel(logging.ERROR)
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_SIZE="1",
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    deepspeed.init_distributed(dist_backend="gloo", verbose=False)
    cases = batch_cases()
    if args.cases:
        cases = cases[:: max(1, len(cases) // args.cases)][: args.cases]
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="trainrepro-oracle-batch-"))
    started = time.time()
    agree, disagreements = 0, []
    categories = {}
    paths = []
    for index, (config, _) in enumerate(cases):
        paths.append(workdir / f"case-{index:04d}.json")
        paths[-1].write_text(json.dumps(config))
    # trainrepro starts LibTorch for every case (~0.5 s): as many at once as there are cores.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        answers = list(pool.map(lambda i: trainrepro_resolves(args.trainrepro, paths[i], cases[i][1]),
                                range(len(cases))))
    not_run = [err for code, _, err in answers if code is None]
    if not_run:
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"batch table: {len(not_run)} of {len(cases)} cases could not be decided: {not_run[0]}")
        return None, len(cases)
    for (config, world_size), (code, out, err) in zip(cases, answers):
        theirs = deepspeed_resolves(config, world_size)
        if "error" in theirs:
            same = code == 2 and theirs["error"] in err
            category = "refused: " + theirs["error"].split(":")[0].split(" has to")[0][:40]
        else:
            try:
                ours = json.loads(out) if code == 0 else None
            except json.JSONDecodeError:
                ours = None
            # The four numbers; other keys trainrepro prints (its DeepSpeed release) do not count.
            same = isinstance(ours, dict) and all(ours.get(k) == v for k, v in theirs.items())
            category = "resolved"
        tally = categories.setdefault(category, [0, 0])
        tally[0] += same
        tally[1] += 1
        if same:
            agree += 1
        else:
            disagreements.append(f"world size {world_size}, {json.dumps(config)}: DeepSpeed "
                                 f"{json.dumps(theirs)}; trainrepro exit {code}: "
                                 f"{(out.strip() or err.strip())[:300]}")
    shutil.rmtree(workdir, ignore_errors=True)
    for category, (same, total) in sorted(categories.items()):
        print(f"    {same:4d} of {total:4d}  {category}")
    for line in disagreements[: args.show]:
        print(f"DISAGREE  {line}")
    print(f"batch table: {agree} of {len(cases)} cases agree with DeepSpeed's DeepSpeedConfig "
          f"({time.time() - started:.0f} s)", flush=True)
    return agree, len(cases)


def command_prepare():
    started = time.time()
    import deepspeed
    from deepspeed.accelerator import get_accelerator
    imported = time.time() - started
    accelerator = get_accelerator()
    if accelerator._name != "cpu":
        print(f"DeepSpeed chose the {accelerator._name} accelerator; the oracle needs DS_ACCELERATOR=cpu")
        return 3
    # DeepSpeed compiles these on first use: FusedAdam (its Adam/AdamW without torch_adam) and the
    # shared-memory communication op that deepspeed.init_distributed builds on the CPU.
    timings = []
    for builder in ("FusedAdamBuilder", "ShareMemCommBuilder"):
        started = time.time()
        accelerator.create_op_builder(builder).load(verbose=False)
        timings.append(f"{builder} {time.time() - started:.1f} s")
    print(f"deepspeed {deepspeed.__version__}: import {imported:.1f} s; CPU ops ready ({', '.join(timings)}; "
          f"compiled once into {os.environ.get('TORCH_EXTENSIONS_DIR', '~/.cache/torch_extensions')})",
          flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["scenario", "batch-table", "prepare", "all", "list"])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--trainrepro", default=os.environ.get(
        "TRAINREPRO_BIN", str(pathlib.Path(os.environ.get("TRAINREPRO_BUILD", ROOT / "build")) / "trainrepro")))
    parser.add_argument("--work", help="keep every run's files in this folder")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--rank-timeout", type=float, default=900.0)
    parser.add_argument("--cases", type=int, default=0, help="batch table: at most this many cases")
    parser.add_argument("--show", type=int, default=15, help="batch table: disagreements shown")
    args = parser.parse_intermixed_args()
    torch.set_num_threads(1)

    if args.command == "list":
        for path in scenarios_in_scope():
            print(os.path.relpath(path, ROOT))
        return 0
    if args.command == "prepare":
        return command_prepare()
    if args.command != "prepare" and not os.access(args.trainrepro, os.X_OK):
        print(f"oracle: {args.trainrepro} is not built (scripts/build)", file=sys.stderr)
        return 3
    if args.command == "scenario":
        counts = command_scenario(args, [pathlib.Path(f) for f in args.files])
        if counts[SKIPPED] == len(args.files):
            return EXIT_SKIPPED
        return 3 if counts[ERROR] else (1 if counts[DISAGREE] else 0)
    if args.command == "batch-table":
        agree, total = command_batch_table(args)
        return 3 if agree is None else (0 if agree == total else 1)
    started = time.time()
    prepared = command_prepare()
    if prepared:
        return prepared
    counts = command_scenario(args, scenarios_in_scope())
    agree, total = command_batch_table(args)
    if agree is None:
        return 3
    print(f"oracle: scenarios {counts[AGREE]} of {sum(counts.values()) - counts[SKIPPED]} agree; batch table {agree} of "
          f"{total} agree ({time.time() - started:.0f} s)")
    return 3 if counts[ERROR] else (0 if not counts[DISAGREE] and agree == total else 1)


if __name__ == "__main__":
    sys.exit(main())
