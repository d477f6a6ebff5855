"""Memory of a run on the real DeepSpeed engine (CPU), measured with the reference engine's
criterion (harness/memory/memory_probe.h): at every micro-step, boundary and around evaluation,
the live tensors by birth step and the host heap in use.

Python has no counting allocator in front of LibTorch's, so live tensors are found by a census:
every tensor storage reachable from Python (the objects the garbage collector tracks, tensors
alive when the probe started, each tensor's .grad, the tensors the autograd graph of a tensor
still saves), each storage counted once by its data pointer. A storage's birth step is the
number of optimizer steps done at the previous census, when it was not there yet (the reference
engine stamps an allocation with the steps done when it is made); a storage missing from one
census and back in a later one is a new storage. The host heap is glibc's mallinfo2 (in-use
bytes of every arena plus mmapped chunks), as host_memory.cpp reads it, minus what the worker's
own records added (record_of_harness). At boundaries the census also counts the autograd nodes
reachable from those tensors' grad_fn (each once): a count that grows is a graph kept across
steps, as harness/memory/autograd_graph.h counts it on the reference engine.

A census runs inside the training step (at every boundary of `trainrepro watch`), so it reads
as little as it can: one pass over the tensors, a node's saved tensors through their raw
SavedTensor (no unpacking: no C++ exception for a freed graph, no saved-tensor hook run), the
resident set through a descriptor kept open.

The objects alive when the probe starts (Python's imports, DeepSpeed's engine) are frozen out of
the collector's generations (gc.freeze) so each census walks only the objects made since; the
tensors among them are kept as weak references. At the first boundary the objects alive then
(the model, the engine, the optimizer's states, made by the first step) are frozen too, and from
then on a census walks only the tensors made since: the frozen tensors' storages are counted
once, when frozen, and again at the end. What a step leaves alive is a new tensor, never a frozen
one, so no survivor is missed; what is not seen between the two counts is a frozen tensor given
new storage in place (`param.data = …`, ZeRO-3's partitions, FSDP2's resharding), which replaces
the storage it had rather than adding to it. Walking the ~90 frozen tensors of the GPT perf
scenario was a quarter of each census, with the CPU's caches cold after a training step.
"""
import contextlib
import ctypes
import gc
import os
import time
import types
import warnings
import weakref

import torch


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _mallinfo2():
    libc = ctypes.CDLL(None)
    function = getattr(libc, "mallinfo2", None)
    if function is None:
        raise RuntimeError("this C library has no mallinfo2 (glibc 2.33 or later): the host heap "
                           "cannot be measured")
    function.restype = _MallInfo2
    function.argtypes = []
    return function


_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _weak_references_to_every_tensor():
    """Weak references to the tensors among every object the collector tracks. Quietly: asking
    a deprecated object for its class warns (torch.distributed.reduce_op: a FutureWarning in the
    user's output, from a line of this file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [weakref.ref(o) for o in gc.get_objects() if isinstance(o, torch.Tensor)]


def _count_storage(tensor, storages, excluded):
    """Adds the CPU storage a tensor holds to storages ((data pointer, bytes) -> bytes), unless
    excluded. A module function, not a closure of the census: a closure that calls itself is a
    reference cycle that keeps the census's dicts alive until the next garbage collection, which
    then freed them between two heap reads and booked their bytes as the training's heap
    shrinking (measured 2026-12-04: -17 to -63 KiB/step beside a growing leak on FSDP2)."""
    if type(tensor) not in _PLAIN_TENSORS and hasattr(tensor, "__tensor_flatten__"):
        # A wrapper subclass (FSDP2's DTensor) has no storage of its own: its inner tensors
        # (the local shard) hold the memory.
        for name in tensor.__tensor_flatten__()[0]:
            _count_storage(getattr(tensor, name), storages, excluded)
        return
    if not tensor.is_cpu:
        return
    storage = tensor.untyped_storage()
    pointer = storage.data_ptr()
    if pointer and pointer not in excluded:
        nbytes = storage.nbytes()
        storages[(pointer, nbytes)] = nbytes


class MemoryCensus:
    """One rank's memory probe. sample() at the reference engine's points; result() for the
    trace's "memory" object."""

    def __init__(self, excluded_tensors, frozen_tensors=()):
        # excluded_tensors(): the worker's own tensors (its records of gradients and parameters,
        # the golden's), never the training's memory. frozen_tensors: weak references to the
        # tensors the caller already froze out of the collector (a serving rank freezes what it
        # kept across jobs, job_isolation.py), which gc.get_objects() no longer lists.
        self._excluded_tensors = excluded_tensors
        self._mallinfo2 = _mallinfo2()
        self._page_size = os.sysconf("SC_PAGE_SIZE")
        self._statm = os.open("/proc/self/statm", os.O_RDONLY)
        self._births = {}  # storage key -> birth step, for the storages seen at the last census
        self._steps_at_last_census = 0
        self._excluded_host = 0
        self._peak = 0
        self.samples = []
        gc.collect()
        self._frozen = list(frozen_tensors) + _weak_references_to_every_tensor()
        gc.freeze()
        # The frozen tensors' storages (key -> [bytes, birth step]) while a census skips them:
        # None until the first boundary, when they are counted and frozen again.
        self._frozen_storages = None
        self.tensor_bookkeeping_bytes = self._measure_tensor_bookkeeping()
        self._saved_names = {}  # autograd node type -> its saved-tensor attribute names

    def close(self):
        """Closes /proc/self/statm: a rank serving job after job (serving.py) would otherwise
        keep one descriptor per job."""
        if self._statm is not None:
            os.close(self._statm)
            self._statm = None

    def host_heap_in_use(self):
        info = self._mallinfo2()
        return int(info.uordblks + info.hblkhd)

    def _resident_bytes(self):
        return int(os.pread(self._statm, 128, 0).split()[1]) * self._page_size

    def _measure_tensor_bookkeeping(self):
        """Host heap one kept CPU tensor costs beyond its data (MemoryProbe's measure)."""
        count = 256
        kept = []
        before = self.host_heap_in_use()
        for _ in range(count):
            kept.append(torch.zeros(1, dtype=torch.float64))
        heap = self.host_heap_in_use() - before
        return max(0, (heap - count * 8) // count)

    @contextlib.contextmanager
    def record_of_harness(self):
        """What the worker's own records add to the host heap is left out of every later sample."""
        before = self.host_heap_in_use()
        yield
        self._excluded_host += self.host_heap_in_use() - before

    def _saved_names_of(self, node):
        """A node type's saved-tensor attributes: the raw ones (`_raw_saved_x`: the SavedTensor
        itself) where the type has them, else the unpacked ones (a Python autograd Function's
        `saved_tensors`, a hand-written node's `_saved_x`)."""
        names = self._saved_names.get(type(node))
        if names is None:
            attributes = dir(node)
            raw = [n for n in attributes if n.startswith("_raw_saved_")]
            unpacked = [n for n in attributes if n.startswith("_saved_")] + (
                ["saved_tensors"] if "saved_tensors" in attributes else [])
            names = (True, raw) if raw else (False, unpacked)
            self._saved_names[type(node)] = names
        return names

    def _saved_tensors_of(self, node):
        """What a node still saves. A SavedTensor's `data` is the saved tensor itself (sharing its
        storage), or None once backward() freed it: reading it needs no unpacking, which would
        raise a C++ exception for a freed node (tens of microseconds each, inside the user's
        step) or run a saved-tensor hook (checkpointing recomputes the forward there). What such
        a hook packed is held by C++ and not counted."""
        raw, names = self._saved_names_of(node)
        for name in names:
            try:
                value = getattr(node, name)
            except RuntimeError:
                # Freed by backward(), which frees all of a node's saved tensors together: the
                # rest need not be tried.
                return
            values = value if isinstance(value, (tuple, list)) else (value,)
            for item in values:
                if raw and item is not None:
                    item = item.data
                if isinstance(item, torch.Tensor):
                    yield item

    def _census(self, with_frozen=True):
        """The live storages ((data pointer, bytes) -> bytes) and the autograd nodes alive: the
        tensors reachable from Python, their gradients and what their autograd graph saves
        (autograd_graph.h counts the same nodes on the reference engine); the frozen tensors
        only with_frozen. One pass, few attribute reads per tensor: this runs inside the user's
        step. The caller collects garbage first."""
        tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
        if with_frozen:
            tensors += [t for t in (ref() for ref in self._frozen) if t is not None]
        excluded = {t.untyped_storage().data_ptr() for t in self._excluded_tensors()}
        storages = {}
        nodes, seen_nodes = [], set()

        def count(tensor):
            _count_storage(tensor, storages, excluded)

        for tensor in tensors:
            count(tensor)
            if tensor.is_leaf:
                if tensor.requires_grad and tensor.grad is not None:
                    count(tensor.grad)
            else:
                node = tensor.grad_fn
                if node is not None and id(node) not in seen_nodes:
                    seen_nodes.add(id(node))
                    nodes.append(node)
        # The autograd graph a kept tensor holds: its nodes' saved tensors (activations), until
        # backward() frees them.
        while nodes:
            node = nodes.pop()
            for saved in self._saved_tensors_of(node):
                count(saved)
            for next_node, _ in node.next_functions:
                if next_node is not None and id(next_node) not in seen_nodes:
                    seen_nodes.add(id(next_node))
                    nodes.append(next_node)
        return storages, len(seen_nodes)

    def _take_census(self, optimizer_step, point):
        """The census's bytes, storages and autograd nodes, the births updated. Its temporary
        lists and dicts are freed on return, before sample() measures what the census left on
        the heap."""
        frozen = self._frozen_storages
        storages, autograd_nodes = self._census(with_frozen=frozen is None)
        self._births = {key: self._births.get(key, self._steps_at_last_census)
                        for key in storages}
        self._steps_at_last_census = optimizer_step
        if frozen is None:
            live, allocations = sum(storages.values()), len(storages)
            if point == "boundary":
                self._freeze_what_lives_now()
            return live, allocations, autograd_nodes
        storages = {key: nbytes for key, nbytes in storages.items() if key not in frozen}
        return (sum(storages.values()) + self._frozen_bytes, len(storages) + len(frozen),
                autograd_nodes)

    def _freeze_what_lives_now(self):
        """Freezes the objects alive at the first boundary (the model, the engine, the
        optimizer's states) and counts the storages of every frozen tensor once, with their
        births, for the censuses that skip them."""
        self._frozen += _weak_references_to_every_tensor()
        gc.freeze()
        storages, _ = self._census()
        self._frozen_storages = {
            key: self._births.get(key, self._steps_at_last_census) for key in storages}
        self._frozen_bytes = sum(storages.values())
        self._births = {}

    def sample(self, point, micro_step, optimizer_step):
        # Garbage first: cycles the training dropped are freed before the heap is read, so they
        # count for neither the training nor the probe (collected after the read, their bytes
        # left the heap during the census and were booked as the probe's negative share, that
        # is, counted as the training's from then on).
        gc.collect()
        heap_before = self.host_heap_in_use()
        host = heap_before - self._excluded_host
        live, allocations, autograd_nodes = self._take_census(optimizer_step, point)
        self._peak = max(self._peak, live)
        host_signals = point != "micro_step"
        self.samples.append({
            "point": point, "micro_step": micro_step, "optimizer_step": optimizer_step,
            "cpu_tensor_bytes": live, "cpu_tensor_allocations": allocations,
            "cpu_tensor_peak_bytes": self._peak,
            "host_heap_bytes": host if host_signals else -1,
            "resident_bytes": self._resident_bytes() if host_signals else -1,
            "autograd_nodes": autograd_nodes if point == "boundary" else -1,
        })
        # What the census keeps (the births) and this sample are the harness's, not the
        # training's; its temporaries are freed by now and count for neither.
        self._excluded_host += self.host_heap_in_use() - heap_before

    def bytes_reachable_from(self, roots):
        """Bytes of the CPU tensor storages reachable from ROOTS (the engine's module, optimizer
        and scheduler) through containers, instances' attributes and tensors' own attributes
        (DeepSpeed's ds_tensor partitions), each storage once; the worker's own tensors are left
        out as in a census. Modules, classes and functions are not followed: a function's globals
        would reach everything the process holds, the loop's locals included."""
        not_followed = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                        types.MethodType, types.CodeType, types.FrameType, str, bytes)
        excluded = {t.untyped_storage().data_ptr() for t in self._excluded_tensors()}
        storages, seen, stack = {}, set(), list(roots)
        while stack:
            item = stack.pop()
            if item is None or id(item) in seen or isinstance(item, not_followed):
                continue
            seen.add(id(item))
            if isinstance(item, torch.Tensor):
                _count_storage(item, storages, excluded)
                if item.is_leaf and item.grad is not None:
                    stack.append(item.grad)
                stack.extend(getattr(item, "__dict__", {}).values())
                continue
            stack.extend(gc.get_referents(item))
        return sum(storages.values())

    def result(self):
        """The trace's "memory" object (harness/worker/worker_trace.cpp reads it)."""
        storages = self._settled_census()
        births = dict(self._frozen_storages or {})
        births.update(self._births)
        live = [[nbytes, births.get(key, self._steps_at_last_census)]
                for key, nbytes in sorted(storages.items())]
        return {"samples": self.samples, "live_at_end": live,
                "tensor_bookkeeping_bytes": self.tensor_bookkeeping_bytes}

    def _settled_census(self, pause_seconds=0.05, most_pauses=40):
        """What is alive at the end: what the steps left behind, not what another thread is
        about to free. torch's gloo worker thread frees a finished collective's tensors only
        once it holds the GIL, which this thread keeps while it counts (measured 2026-12-04: a
        false tensor_memory_leak in 1 of 14 2-rank watched runs of a loop that keeps only
        loss.item(), one 2.6 KiB allocation born in the last step). One fixed pause was not
        enough on a loaded machine, where that thread may wait longer than any pause for a
        core: the census is taken again after each pause until two in a row find the same
        storages (at most most_pauses pauses, 2 s: then the last is kept)."""
        previous = None
        for _ in range(most_pauses):
            time.sleep(pause_seconds)  # the GIL released: other threads free what they hold
            gc.collect()
            storages, _ = self._census()
            if storages == previous:
                break
            previous = storages
        return storages
