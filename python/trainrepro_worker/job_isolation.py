"""What a rank serving job after job (serving.py) puts back between two jobs, so that job N trains,
measures and fails as it would alone in a fresh process, and how it checks that it did.

Kept across jobs, on purpose (they are what a fresh start costs, and hold nothing of a scenario):
the Python interpreter, the imports (torch, deepspeed and its compiled ops; torch alone in an
FSDP2 set), the default process group (deepspeed.init_distributed, or init_process_group in an
FSDP2 set; gloo) and DeepSpeed's CPU all-reduce buffer in /dev/shm.

Put back after every job, and why:
- The DeepSpeed engine is destroyed (engine.destroy(): its optimizer's hooks, DeepSpeed's
  module-and-parameter name tables, a Python-gc suspension its config may have asked for) and
  dropped: the tables hold the module, which would keep job N's model alive in job N+1.
- Process groups the job created (DeepSpeed's new_group for its world, data-parallel and
  expert groups) are destroyed, and deepspeed.utils.groups' cached groups put back as they were
  at the start: a cached group is a scenario's topology, and each kept one holds gloo sockets.
- ZeRO-3's module-level state is put back as a fresh import has it (RESTORED_MODULES): every
  ZeRO-3 engine appends its model to parameter_offload.FWD_MODULE_STACK and never takes it off
  (DeepSpeed 0.19.8, DeepSpeedZeRoOffload.setup_zero_stage3_hooks), so without this each ZeRO-3
  job's model, optimizer and partitions outlived it (6-38 storages a rank, measured on zero/)
  and its set retired; partition_parameters' buffer cache and Init nesting count likewise.
- The functools caches of those modules' functions and methods, and of DTensor's sharding
  propagator (FSDP2), are emptied: the ZeRO-3 coordinator's __params_to_release is an
  lru_cache on a method, so its keys hold every coordinator and submodule that ever asked (the
  same leak, from the other side); a fresh process starts with them empty.
- gc.unfreeze(), gc.enable(), gc.collect(): before_job() freezes what lives before a job, and
  memory_census.py what lives at its start and first boundary, out of the collector; left
  frozen, job N's model and engine would never be collected and job N+1's census would count
  them as its own starting memory. One collection, and more only when check() finds something
  left: each is a full pass over every object the imports made (0.15 s, measured), and a
  second one almost always finds nothing. The freeze before the job spares the census its own
  two full passes at the start (scenarios/zero/ served: 151.5-155.7 s without it, 123.3 s
  with, 70 of 70 verdicts the same).
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
import weakref

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
    and their gradients, as a census counts them; and weak references to those tensors."""
    storages = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a deprecated object warns when asked for its class
        tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    for tensor in tensors:
        memory_census._count_storage(tensor, storages, set())
        if tensor.is_leaf and tensor.grad is not None:
            memory_census._count_storage(tensor.grad, storages, set())
    return storages, [weakref.ref(t) for t in tensors]


# Modules whose plain globals (_plain_globals) hold a job's state and are put back after each job,
# in place. One not imported is skipped: an FSDP2 set imports no DeepSpeed, and an older release
# may lack one (`import deepspeed` imports all four in 0.19.8). parameter_offload re-exports
# partition_parameters' globals (`from ... import *`), so both are listed.
RESTORED_MODULES = ("deepspeed.utils.groups",
                    "deepspeed.runtime.zero.parameter_offload",
                    "deepspeed.runtime.zero.partition_parameters",
                    "deepspeed.runtime.zero.partitioned_param_coordinator",
                    "torch.distributed.tensor._sharding_prop")


def _dtensor_dispatch_caches():
    """The caches of DTensor's one sharding propagator (an object, not a module's function):
    their keys hold the DTensorSpecs of every op FSDP2 ran, and through them a DeviceMesh.
    (torch's C++ dispatch cache holds them too, which no public call clears: that is why a
    serving rank makes its mesh once, fsdp2_worker.device_mesh.)"""
    dtensor = sys.modules.get("torch.distributed.tensor")
    if dtensor is None:
        return []
    propagator = dtensor.DTensor._op_dispatcher.sharding_propagator
    return [value for value in vars(propagator).values()
            if callable(getattr(value, "cache_clear", None))]


def _function_caches(module):
    """The functools caches (lru_cache, cache) of a module's functions and of its classes'
    methods, found through functools.wraps' __wrapped__ and through closures: DeepSpeed's
    instrument_w_nvtx wraps an lru_cache in a plain closure."""
    found, seen = [], set()

    def visit(value, depth):
        if id(value) in seen or depth > 3:
            return
        seen.add(id(value))
        if not isinstance(value, type) and callable(getattr(value, "cache_clear", None)):
            found.append(value)  # a cache (a class with a cache_clear method is not one)
        wrapped = getattr(value, "__wrapped__", None)
        if wrapped is not None:
            visit(wrapped, depth + 1)
        for cell in getattr(value, "__closure__", None) or ():
            try:
                visit(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                pass

    for value in vars(module).values():
        if isinstance(value, type) and value.__module__ == module.__name__:
            for member in vars(value).values():
                visit(member, 0)
        elif callable(value):
            visit(value, 0)
    return found


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
        self.module_globals = []  # (module, its plain globals at the start)
        self.function_caches = []
        for name in RESTORED_MODULES:
            module = sys.modules.get(name)
            if module is None:
                continue
            self.module_globals.append((module, _plain_globals(module)))
            self.function_caches.extend(_function_caches(module))
        self.function_caches.extend(_dtensor_dispatch_caches())
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
        self.storages, self.kept_tensors = live_storages()

    def make_memory_probe(self, excluded_tensors):
        census = memory_census.MemoryCensus(excluded_tensors, frozen_tensors=self.kept_tensors)
        self.censuses.append(census)
        return census

    def before_job(self):
        # What lives now (the imports, the process group, what check() just counted) is frozen
        # out of the collector, so the job's census starts by walking only what the job makes:
        # a full pass over the imports' objects is 0.15 s, and a census starts with two. The
        # tensors among them are handed to the census (make_memory_probe), which counts them
        # as a census in a fresh process does. reset() unfreezes them with the job's.
        gc.freeze()
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
        self._restore_module_globals()
        for cache in self.function_caches:
            cache.cache_clear()
        dtype, grad, threads, deterministic = self.switches
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        os.environ.clear()
        os.environ.update(self.environment)
        gc.unfreeze()
        gc.enable()
        gc.collect()

    def _restore_module_globals(self):
        for module, kept in self.module_globals:
            for name, value in kept.items():
                current = getattr(module, name, None)
                if type(value) in (dict, list, set) and type(current) is type(value):
                    # In place: another module may hold the same container (`from m import`).
                    current.clear()
                    current.update(value) if not isinstance(value, list) else current.extend(value)
                else:
                    setattr(module, name, value)

    def _storages_left(self):
        now, self.kept_tensors = live_storages()
        return {key: nbytes for key, nbytes in now.items() if key not in self.storages}

    def check(self):
        """What the job left behind: {"storages": count, "bytes": n, "process_groups": count};
        all zero when the rank is as it was before its first job."""
        left = self._storages_left()
        # A collection runs finalizers (DeepSpeed's weakref.finalize on parameters) that may
        # free more for the next one: collected until nothing more is found, then counted again.
        for _ in range(10):
            if not left or gc.collect() == 0:
                break
            left = self._storages_left()
        return {"storages": len(left), "bytes": sum(left.values()),
                "process_groups": len(process_groups() - self.process_groups)}
