"""What a rank serving job after job (serving.py) puts back between two jobs, so that job N trains,
measures and fails as it would alone in a fresh process, and how it checks that it did.

Kept across jobs, on purpose (they are what a fresh start costs, and hold nothing of a scenario):
the Python interpreter, the imports (torch, deepspeed and its compiled ops), the default process
group (deepspeed.init_distributed, gloo) and DeepSpeed's CPU all-reduce buffer in /dev/shm.

Put back after every job, and why:
- The DeepSpeed engine is destroyed (engine.destroy(): its optimizer's hooks, DeepSpeed's
  module-and-parameter name tables, a Python-gc suspension its config may have asked for) and
  dropped: the tables hold the module, which would keep job N's model alive in job N+1.
- Process groups the job created (DeepSpeed's new_group for its world, data-parallel and
  expert groups) are destroyed, and deepspeed.utils.groups' cached groups put back as they were
  at the start: a cached group is a scenario's topology, and each kept one holds gloo sockets.
- gc.unfreeze(), gc.enable(), gc.collect() until it finds nothing: memory_census.py freezes what lives at a job's start
  and first boundary out of the collector; left frozen, job N's model and engine would never be
  collected and job N+1's census would count them as its own starting memory.
- The census's /proc/self/statm descriptor is closed (MemoryCensus.close).
- Seeds: torch's generator is seeded again with the seed it had when the rank started (a fresh
  process's, so a job that draws from it draws what it would alone); Python's `random` and, if
  imported, numpy's global generator are seeded with 0 (a fresh process seeds them from the OS,
  so no job can rely on their values; 0 makes a serving set repeatable).
- torch's thread-local and global switches a job may flip: default dtype, grad mode, threads,
  deterministic algorithms; os.environ as it was after the process group started.
The memory baseline needs no step of its own: each job builds its own MemoryCensus, which reads
what lives at its start after the collection above.

check() then proves the job left nothing: the CPU tensor storages reachable from Python (the
census's own view, memory_census._count_storage) must be those alive before the first job, and
no process group beyond those. A job that leaves something (a DeepSpeed cache this list misses)
is reported, and serving.py retires the set instead of letting job N+1 see it.
"""
import gc
import os
import random
import sys
import warnings

import torch
import torch.distributed as dist

import memory_census


def process_groups():
    """The process groups torch knows of. torch has no public list; _world.pg_map (group ->
    backend) is where destroy_process_group itself looks."""
    world = getattr(dist.distributed_c10d, "_world", None)
    return set(world.pg_map) if world is not None else set()


def live_storages():
    """(data pointer, bytes) of every CPU tensor storage reachable from Python's tracked objects
    and their gradients, as a census counts them."""
    storages = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a deprecated object warns when asked for its class
        tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    for tensor in tensors:
        memory_census._count_storage(tensor, storages, set())
        if tensor.is_leaf and tensor.grad is not None:
            memory_census._count_storage(tensor.grad, storages, set())
    return storages


def _plain_globals(module):
    """A module's globals a job can change in place or rebind: None, numbers, strings,
    containers (copied one level deep)."""
    kept = {}
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            kept[name] = value
        elif type(value) in (dict, list, set):
            kept[name] = type(value)(value)
    return kept


class JobIsolation:
    """Taken once, after the imports and the process group, before the first job; reset() after
    every job, check() right after."""

    def __init__(self):
        import deepspeed.utils.groups as groups
        self.groups = groups
        self.groups_globals = _plain_globals(groups)
        self.engines = []  # ds_worker.initialize_engine appends the job's engine here
        self.censuses = []  # the job's MemoryCensus objects (make_memory_probe below)
        # The seed, not get_rng_state(): that state is a 5 KiB tensor, which every job's census
        # would count as alive at its start.
        self.torch_seed = torch.initial_seed()
        self.environment = dict(os.environ)
        self.switches = (torch.get_default_dtype(), torch.is_grad_enabled(),
                         torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
        gc.collect()
        self.process_groups = process_groups()
        self.storages = live_storages()

    def make_memory_probe(self, excluded_tensors):
        census = memory_census.MemoryCensus(excluded_tensors)
        self.censuses.append(census)
        return census

    def before_job(self):
        torch.manual_seed(self.torch_seed)
        random.seed(0)
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed(0)

    def reset(self):
        # Popped, never a loop variable: one would keep the last engine alive in this frame
        # through the collection below (measured: the job's optimizer and states survived).
        while self.engines:
            try:
                self.engines.pop().destroy()
            except Exception:  # noqa: BLE001 - a half-built engine: dropping it is what is left
                pass
        while self.censuses:
            self.censuses.pop().close()
        groups = list(process_groups() - self.process_groups)
        while groups:
            try:
                dist.destroy_process_group(groups.pop())
            except Exception:  # noqa: BLE001 - already gone with its engine
                pass
        self._restore_groups_globals()
        dtype, grad, threads, deterministic = self.switches
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        os.environ.clear()
        os.environ.update(self.environment)
        gc.unfreeze()
        gc.enable()
        # Until nothing is left to collect: a collection runs finalizers (DeepSpeed's
        # weakref.finalize on parameters) that may free more, for the next one.
        for _ in range(10):
            if gc.collect() == 0:
                break

    def _restore_groups_globals(self):
        for name, value in self.groups_globals.items():
            current = getattr(self.groups, name, None)
            if type(value) in (dict, list, set) and type(current) is type(value):
                # In place: another module may hold the same container (`from groups import`).
                current.clear()
                current.update(value) if not isinstance(value, list) else current.extend(value)
            else:
                setattr(self.groups, name, value)

    def check(self):
        """What the job left behind: {"storages": count, "bytes": n, "process_groups": count};
        all zero when the rank is as it was before its first job."""
        now = live_storages()
        left = {key: nbytes for key, nbytes in now.items() if key not in self.storages}
        return {"storages": len(left), "bytes": sum(left.values()),
                "process_groups": len(process_groups() - self.process_groups)}
