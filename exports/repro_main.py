#!/usr/bin/env python3
"""Reproduction of a trainrepro scenario with PyTorch and the real DeepSpeed.

Exported by `trainrepro export --python` (trainrepro __VERSION__). The scenario (its name,
description, DeepSpeed config and loop habits), the file it came from and what trainrepro expects
are the JSON text in EXPORTED below: data, read with json.loads, never run as code. This script
runs the real DeepSpeed on the CPU with the scenario's DeepSpeed config, verbatim, and the
training loop's habits, then compares the gradients DeepSpeed accumulated at each optimizer step
with the gradients of ONE unaccumulated batch of the intended size (the scenario's
golden.train_batch_size samples), computed by plain PyTorch in float64 from the same weights and
the same samples.

Needs: torch and deepspeed (pip install deepspeed). Run (THIS_FILE: this file's name):
    DS_ACCELERATOR=cpu python THIS_FILE                      (world size 1)
    DS_ACCELERATOR=cpu torchrun --nproc_per_node N THIS_FILE   (world size N)
Exit code: 1 when DeepSpeed's gradients differ from the unaccumulated batch (the bug reproduces),
0 when they agree, 2 when it cannot run as written.

The model and data are trainrepro's deterministic ones (seeded, written again in PyTorch below);
the loop is written the way a user writes it against DeepSpeed's API: `engine(inputs)` (or
`engine.module(inputs)`), the loss, `engine.backward(loss)` (or `loss.backward()`),
`engine.step()` (or `optimizer.step()`). Rank r feeds micro-step m the samples
[(m*W + r)*MB, (m*W + r + 1)*MB).
"""
import json
import os
import sys
import types

# Everything taken from the scenario, as one JSON text written as Python string literals by
# trainrepro's escaper (ASCII only, every quote and backslash escaped): {"scenario": the scenario
# file's JSON, "source": the file it was exported from, "expected": what trainrepro found}.
EXPORTED = json.loads(
__EXPORTED_DATA__
)
SCENARIO = EXPORTED["scenario"]
TOLERANCE = 1e-3  # relative gradient error; float32 rounding stays below 1e-5 on these sizes


def load_module(name, source):
    """The PyTorch sources at the end of this file, as modules (kept as text so this file
    needs nothing beside it)."""
    module = types.ModuleType(name)
    module.__file__ = os.path.abspath(__file__)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def main():
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"),
                       ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29517")):
        os.environ.setdefault(key, value)
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    wanted = SCENARIO.get("world_size", 1)
    if world != wanted:
        print(f"this reproduction runs on {wanted} rank(s), found WORLD_SIZE={world}: "
              f"DS_ACCELERATOR=cpu torchrun --nproc_per_node {wanted} {sys.argv[0]}")
        return 2
    import torch
    torch.set_num_threads(1)
    zoo = load_module("zoo", ZOO_SOURCE)
    load_module("loop_pieces", LOOP_PIECES_SOURCE)  # imported by the worker
    worker = load_module("ds_worker", WORKER_SOURCE)
    golden = SCENARIO["golden"]
    job = {"model": SCENARIO["model"], "data": zoo.data_with_defaults(SCENARIO["data"]),
           "deepspeed": SCENARIO["deepspeed"], "loop": SCENARIO.get("loop", {}),
           "parameter_groups": SCENARIO.get("parameter_groups"),
           "client_optimizer": SCENARIO.get("client_optimizer"),
           "steps": golden.get("steps", 4), "seeded": True}
    import deepspeed
    release = SCENARIO.get("deepspeed_version", "0.19.8")
    if rank == 0 and not deepspeed.__version__.startswith(release.rsplit(".", 1)[0] + "."):
        print(f"note: this scenario follows DeepSpeed {release}'s semantics; installed is "
              f"{deepspeed.__version__}, where its bug may be fixed or its fix may differ")
    record = {}
    try:
        worker.run(job, rank, world, record)
    except Exception as exception:  # DeepSpeed refusing what the loop does, say
        message = str(exception).splitlines()[0] if str(exception) else ""
        print(f"DeepSpeed {deepspeed.__version__} raised while training: "
              f"{type(exception).__name__}: {message}")
        return 2
    if record.get("initialize_error"):
        print(f"DeepSpeed refused the config: {record['initialize_error']}")
        return 1
    if rank != 0:
        return 0
    engine = record["engine"]
    print(f"DeepSpeed {record['deepspeed_version']}: train_batch_size {engine['train_batch_size']}"
          f" = micro-batch {engine['train_micro_batch_size_per_gpu']} x gradient_accumulation_steps"
          f" {engine['gradient_accumulation_steps']} x world size {engine['world_size']}; "
          f"intended batch {golden['train_batch_size']}")
    # The reference: the same model in float64, the weights DeepSpeed had before each step.
    reference = zoo.build_model_with_defaults(SCENARIO["model"])
    zoo.initialise_as_trainrepro(reference, SCENARIO["model"].get("seed", 0))
    frozen = SCENARIO["model"].get("frozen", [])
    for name, parameter in reference.named_parameters():
        if any(zoo.is_within(name, entry) for entry in frozen):
            parameter.requires_grad_(False)
    trainable = zoo.trainable(reference)
    before = [p.detach().float().double() for p in trainable]  # DeepSpeed trains in float32
    source = zoo.SampleSource(job["data"])
    batch = golden["train_batch_size"]
    worst = 0.0
    for s, step in enumerate(record["steps"]):
        with torch.no_grad():
            for parameter, value in zip(trainable, before):
                parameter.copy_(value)
        sums, items = zoo.gradient_of_sum(reference, source, s * batch, (s + 1) * batch)
        expected = torch.cat([(g / items).flatten() for g in sums])
        found = torch.cat([g.double().flatten() for g in step["gradients"]])
        error = float((found - expected).norm() / expected.norm())
        worst = max(worst, error)
        print(f"optimizer step {s}: DeepSpeed's accumulated gradients vs one batch of {batch}: "
              f"relative error {error:.2e}, norm ratio {float(found.norm() / expected.norm()):.4f}"
              f" -> {'DIFFERENT' if error > TOLERANCE else 'same'}")
        before = [p.double() for p in step["parameters"]]
    if worst > TOLERANCE:
        print(f"REPRODUCED: DeepSpeed's gradients differ from one unaccumulated batch of {batch} "
              f"(worst relative error {worst:.2e}); trainrepro: {EXPORTED['expected']}")
        return 1
    print(f"AGREES: DeepSpeed's gradients equal one unaccumulated batch of {batch} at every step "
          f"(worst relative error {worst:.2e})")
    return 0


# trainrepro's model zoo and data generators in PyTorch (python/trainrepro_worker/zoo.py).
ZOO_SOURCE = r'''__ZOO_SOURCE__'''

# What trainrepro's DeepSpeed and FSDP2 workers share (python/trainrepro_worker/loop_pieces.py).
LOOP_PIECES_SOURCE = r'''__LOOP_PIECES_SOURCE__'''

# One rank of the training loop with the scenario's habits against the real DeepSpeed
# (python/trainrepro_worker/ds_worker.py).
WORKER_SOURCE = r'''__WORKER_SOURCE__'''

if __name__ == "__main__":
    sys.exit(main())
