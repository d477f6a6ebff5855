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

The objects alive when the probe starts (Python's imports, DeepSpeed's engine) are frozen out of
the collector's generations (gc.freeze) so each census walks only the objects made since; the
tensors among them are kept as weak references and counted while they live.
"""
import contextlib
import ctypes
import gc
import os
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


class MemoryCensus:
    """One rank's memory probe. sample() at the reference engine's points; result() for the
    trace's "memory" object."""

    def __init__(self, excluded_tensors):
        # excluded_tensors(): the worker's own tensors (its records of gradients and parameters,
        # the golden's), never the training's memory.
        self._excluded_tensors = excluded_tensors
        self._mallinfo2 = _mallinfo2()
        self._page_size = os.sysconf("SC_PAGE_SIZE")
        self._births = {}  # storage key -> birth step, for the storages seen at the last census
        self._steps_at_last_census = 0
        self._excluded_host = 0
        self._peak = 0
        self.samples = []
        gc.collect()
        self._frozen = [weakref.ref(o) for o in gc.get_objects() if isinstance(o, torch.Tensor)]
        gc.freeze()
        self.tensor_bookkeeping_bytes = self._measure_tensor_bookkeeping()
        self._saved_names = {}  # autograd node type -> its saved-tensor attribute names

    def host_heap_in_use(self):
        info = self._mallinfo2()
        return int(info.uordblks + info.hblkhd)

    def _resident_bytes(self):
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * self._page_size

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

    def _saved_tensors_of(self, node):
        names = self._saved_names.get(type(node))
        if names is None:
            names = [n for n in dir(node) if n.startswith("_saved_")] + (
                ["saved_tensors"] if hasattr(node, "saved_tensors") else [])
            self._saved_names[type(node)] = names
        for name in names:
            try:
                value = getattr(node, name)
            except RuntimeError:  # freed by backward(): nothing is saved any more
                continue
            values = value if isinstance(value, (tuple, list)) else (value,)
            for item in values:
                if isinstance(item, torch.Tensor):
                    yield item

    def _reachable_tensors(self):
        """The tensors reachable from Python and the number of autograd nodes they keep alive
        (autograd_graph.h counts the same on the reference engine)."""
        gc.collect()
        tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
        tensors += [t for t in (ref() for ref in self._frozen) if t is not None]
        found = list(tensors)
        nodes, seen_nodes = [], set()
        for tensor in tensors:
            grad = tensor.grad if tensor.requires_grad and tensor.is_leaf else None
            if grad is not None:
                found.append(grad)
            if tensor.grad_fn is not None and id(tensor.grad_fn) not in seen_nodes:
                seen_nodes.add(id(tensor.grad_fn))
                nodes.append(tensor.grad_fn)
        # The autograd graph a kept tensor holds: its nodes' saved tensors (activations), until
        # backward() frees them.
        while nodes:
            node = nodes.pop()
            found.extend(self._saved_tensors_of(node))
            for next_node, _ in node.next_functions:
                if next_node is not None and id(next_node) not in seen_nodes:
                    seen_nodes.add(id(next_node))
                    nodes.append(next_node)
        return found, len(seen_nodes)

    def _census(self):
        """The live storages ((data pointer, bytes) -> bytes) and the autograd nodes alive."""
        excluded = {t.untyped_storage().data_ptr() for t in self._excluded_tensors()}
        storages = {}
        tensors, autograd_nodes = self._reachable_tensors()
        for tensor in tensors:
            if tensor.device.type != "cpu" or tensor.is_meta:
                continue
            storage = tensor.untyped_storage()
            pointer = storage.data_ptr()
            if pointer == 0 or pointer in excluded:
                continue
            storages[(pointer, storage.nbytes())] = storage.nbytes()
        return storages, autograd_nodes

    def _take_census(self, optimizer_step):
        """The census's bytes, storages and autograd nodes, the births updated. Its temporary
        lists and dicts are freed on return, before sample() measures what the census left on
        the heap."""
        storages, autograd_nodes = self._census()
        self._births = {key: self._births.get(key, self._steps_at_last_census)
                        for key in storages}
        self._steps_at_last_census = optimizer_step
        return sum(storages.values()), len(storages), autograd_nodes

    def sample(self, point, micro_step, optimizer_step):
        heap_before = self.host_heap_in_use()
        host = heap_before - self._excluded_host
        live, allocations, autograd_nodes = self._take_census(optimizer_step)
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

    def result(self):
        """The trace's "memory" object (harness/worker/worker_trace.cpp reads it)."""
        storages, _ = self._census()
        live = [[nbytes, self._births.get(key, self._steps_at_last_census)]
                for key, nbytes in sorted(storages.items())]
        return {"samples": self.samples, "live_at_end": live,
                "tensor_bookkeeping_bytes": self.tensor_bookkeeping_bytes}
