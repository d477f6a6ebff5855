"""What `trainrepro watch` records of the user's own training script, on each rank.

sitecustomize.py calls patch_deepspeed() when the script imports deepspeed. From then on
`deepspeed.initialize` returns the engine it always returns, but watched: for the first K
optimizer steps (TRAINREPRO_WATCH_STEPS) each window (the micro-steps up to an optimizer step)
records
  - for --golden float64 (and --save-scenario's first window) the weights at the window's
    start (the fp32 masters, full: DeepSpeed's own safe_get_full_fp32_param at ZeRO 1-3),
  - what each micro-step's forward received (tensors, and dicts, lists and tuples of them),
  - the loss function the loop applied to the forward's outputs (torch.nn.functional's
    cross_entropy or mse_loss, also through nn.CrossEntropyLoss / nn.MSELoss) and its target,
  - the loss the loop passed to backward,
  - the gradients DeepSpeed accumulated, at the boundary before the optimizer step (before
    clipping; safe_get_full_grad at ZeRO 1-3),
  - the order of the loop's calls (forward, backward, step, zero_grad, optimizer.step, the
    scheduler's step, a direct loss.backward()).
When a window closes (at its boundary, before the optimizer updates the weights) its golden's
pieces are computed at once, and the window's inputs dropped: for every micro-batch the gradient
of its summed loss at the window's start weights and its items (targets counted, ignore_index
left out), through torch.func.functional_call over the same module, nothing of the user's
changed. --golden own (TRAINREPRO_WATCH_GOLDEN, the default) computes them in the run's own
dtype and kernels on the module's weights, which at the boundary are still the start weights;
--golden float64 in float64 at start weights copied at the window's first forward (about three
times the model's memory: small models). Gradients are kept on the judged coordinates only
(TRAINREPRO_WATCH_COORDINATES, the same on every rank), in float64: the golden's backward cuts
each weight's gradient down to them as soon as it is complete, so the whole model's gradients
never exist at once, and a window costs a few MiB after.
trainrepro adds the pieces up over micro-steps and ranks into the golden and the hypotheses
(harness/watch/judge_watched.cpp). At ZeRO 3 the module's parameters are partitions: they are
gathered (DeepSpeed's GatheredParameters) while the golden runs, and DeepSpeed's own module
hooks, which would gather and release partitions around every submodule, are set aside.

Memory, for the first M optimizer steps (TRAINREPRO_WATCH_MEMORY_STEPS, 0: none): at every
boundary the census of `run --engine deepspeed` (memory_census.py: the live tensors by birth step,
the autograd nodes they keep, the host heap), the watch's own records left out.

Written into TRAINREPRO_WATCH_DIR: rank<R>.json and rank<R>.safetensors (safetensors format,
written here: the user's environment need not have the package) when the K windows are recorded
or the process exits, and rank<R>.memory.json when the M steps are sampled or the process exits;
each atomically.
"""
import atexit
import contextlib
import functools
import inspect
import json
import math
import os
import platform
import struct
import sys
import traceback

FORMAT = "trainrepro-watch"
FORMAT_VERSION = 1

_watchers = []          # the engines being watched in this process (one, normally)
_loss_originals = {}    # torch.nn.functional name -> the function it had


def _settings():
    return {"dir": os.environ["TRAINREPRO_WATCH_DIR"],
            "steps": int(os.environ.get("TRAINREPRO_WATCH_STEPS", "4")),
            "save": os.environ.get("TRAINREPRO_WATCH_SAVE") == "1",
            "loss": os.environ.get("TRAINREPRO_WATCH_LOSS", "auto"),
            "memory_steps": int(os.environ.get("TRAINREPRO_WATCH_MEMORY_STEPS", "0")),
            "golden": os.environ.get("TRAINREPRO_WATCH_GOLDEN", "own"),
            "coordinates": int(os.environ.get("TRAINREPRO_WATCH_COORDINATES",
                                              str(_DEFAULT_COORDINATES)))}


# How many gradient coordinates a window is judged on (--coordinates; 0: all of them). Every
# hypothesis is a fixed combination of the micro-steps' gradients, the same on every coordinate,
# so a sample judges it as the whole does; 2^18 float64 coordinates are 2 MiB per gradient kept,
# whatever the model's size.
_DEFAULT_COORDINATES = 1 << 18
# A tensor is never judged on fewer coordinates than this (or all of its own, when it has
# fewer): a fault confined to one tensor still shows, however small its share of the model.
_FEWEST_PER_TENSOR = 64
_SAMPLE_SEED = 0x7261696e  # the same coordinates on every rank and in every run


def _let_collective_threads_finish():
    """The last thing the watched process does at exit (registered before every other handler
    of the watch, so it runs after them). torch 2.11's gloo worker thread frees a finished
    collective's tensors after the collective has returned, and freeing a tensor that has a
    Python object needs the GIL: when the interpreter is already finalizing, that thread exits
    inside a C++ destructor and the whole process aborts ("terminate called without an active
    exception", SIGABRT; seen in c10d::ProcessGroupGloo::runLoop). A DeepSpeed script on CPU
    that ends right after its last engine.step() hits that in about one 2-rank run in five, with
    or without the watch (measured 2026-12-04, DeepSpeed 0.19.8); the watch would then report a
    failed command after judging every step. Releasing the GIL for 50 ms first lets the thread
    finish: 0 aborts in 16 runs."""
    import time

    torch = sys.modules.get("torch")
    distributed = getattr(torch, "distributed", None) if torch else None
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        time.sleep(0.05)


def patch_deepspeed(deepspeed):
    """Wraps deepspeed.initialize (called once, when the script imports deepspeed)."""
    atexit.register(_let_collective_threads_finish)
    original = deepspeed.initialize

    @functools.wraps(original)
    def initialize(*args, **kwargs):
        try:
            result = original(*args, **kwargs)
        except Exception as error:
            # The script's own call failed (a batch assertion, a bad config): said as such, not
            # as a script that never called it.
            _write_initialize_raised(error)
            raise
        rank, world = _rank_and_world()
        # Read by trainrepro when no rank wrote its recording (killed first): an engine existed.
        _write_atomically(os.path.join(_settings()["dir"], f"engine-rank{rank}.json"),
                          json.dumps({"rank": rank, "world_size": world,
                                      "pid": os.getpid()}).encode())
        try:
            _watchers.append(Watcher(result, deepspeed, _config_given(args, kwargs)))
        except Exception as error:  # the user's training goes on; the verdict says why
            _write_failure(f"trainrepro watch could not watch the engine: {error!r}",
                           traceback.format_exc())
        return result

    deepspeed.initialize = initialize
    patch_loss_functions()


def _config_given(args, kwargs):
    """The config as the script passed it to deepspeed.initialize (a dict, a JSON file, or the
    argparse namespace's deepspeed_config), for --save-scenario; None when it cannot be read."""
    given = kwargs.get("config", kwargs.get("config_params"))
    if given is None:
        namespace = kwargs.get("args", args[0] if args else None)
        given = getattr(namespace, "deepspeed_config", None)
    if isinstance(given, (str, os.PathLike)):
        try:
            with open(given) as config_file:
                given = json.load(config_file)
        except (OSError, ValueError):
            return None
    return given if isinstance(given, dict) else None


def patch_loss_functions():
    import torch.nn.functional as F
    if _loss_originals:
        return
    for name in ("cross_entropy", "mse_loss"):
        original = getattr(F, name)
        signature = inspect.signature(original)

        def watched(*args, _name=name, _original=original, _signature=signature, **kwargs):
            # After the watched steps this stays on every loss call of the run: one check, not a
            # signature binding, until a watcher is recording a micro-step.
            if not any(w.recording_micro_step() for w in _watchers):
                return _original(*args, **kwargs)
            try:
                bound = _signature.bind(*args, **kwargs)
                bound.apply_defaults()
            except TypeError:
                return _original(*args, **kwargs)  # the call itself is wrong: torch's error
            result = _original(*args, **kwargs)
            # The value the loop's loss function returned: the golden must reproduce it.
            for watcher in _watchers:
                watcher.saw_loss_function(_name, dict(bound.arguments), result)
            return result

        functools.update_wrapper(watched, original)
        _loss_originals[name] = original
        setattr(F, name, watched)


def _rank_and_world():
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _write_atomically(path, data):
    with open(path + ".partial", "wb") as out:
        out.write(data)
    os.replace(path + ".partial", path)


def _write_failure(reason, trace):
    rank, world = _rank_and_world()
    folder = _settings()["dir"]
    _write_atomically(os.path.join(folder, f"rank{rank}.json"), json.dumps(
        {"format": FORMAT, "version": FORMAT_VERSION, "rank": rank, "world_size": world,
         "failure": reason, "traceback": trace}).encode())


def _calling(module, function):
    """A module holding MODULE whose forward calls FUNCTION: torch.func.functional_call over it
    swaps MODULE's parameters and buffers for the whole call, not only MODULE's forward. (Made
    here, not at import: this file is loaded before the script imports torch.)"""
    import torch

    class Calling(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self):
            return function()

    return Calling()


def _defined_by_deepspeed(hook):
    function = getattr(hook, "func", hook)  # functools.partial
    return getattr(function, "__module__", "").startswith("deepspeed.")


def _write_initialize_raised(error):
    rank, world = _rank_and_world()
    _write_atomically(os.path.join(_settings()["dir"], f"rank{rank}.json"), json.dumps(
        {"format": FORMAT, "version": FORMAT_VERSION, "rank": rank, "world_size": world,
         "initialize_raised": f"{type(error).__name__}: {error}"}).encode())


def _write_safetensors_atomically(path, tensors):
    """The safetensors format (an 8-byte little-endian header size, the JSON header, the data),
    written tensor by tensor: never the whole file in memory at once."""
    header, offset = {}, 0
    for name, tensor in tensors.items():
        size = tensor.numel() * 8
        header[name] = {"dtype": "F64", "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".partial", "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for tensor in tensors.values():
            out.write(tensor.detach().to("cpu").contiguous().double().numpy().tobytes())
    os.replace(path + ".partial", path)


def _size(shape):
    count = 1
    for size in shape:
        count *= size
    return count


def _coordinates_judged(shapes, budget, torch):
    """For each trainable parameter, the flat indices of the gradient coordinates judged (None:
    all of them): every coordinate while the model has at most `budget` (0: no limit), else each
    tensor's share of the budget in proportion to its size, at least _FEWEST_PER_TENSOR, drawn
    at random from a fixed seed, so every rank judges the same coordinates (their sums over the
    ranks are the golden's) and every run the same."""
    sizes = [_size(shape) for shape in shapes]
    if budget <= 0 or sum(sizes) <= budget:
        return [None] * len(sizes)
    total, chosen = sum(sizes), []
    for j, size in enumerate(sizes):
        count = max(_FEWEST_PER_TENSOR, round(budget * size / total))
        if count >= size:
            chosen.append(None)
            continue
        generator = torch.Generator().manual_seed(_SAMPLE_SEED + j)
        chosen.append(torch.unique(torch.randint(size, (count,), generator=generator)))
    return chosen


def _map_tensors(value, function):
    import torch
    if isinstance(value, torch.Tensor):
        return function(value)
    if isinstance(value, dict):
        return type(value)((k, _map_tensors(v, function)) for k, v in value.items()) \
            if type(value) is dict else {k: _map_tensors(v, function) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        mapped = [_map_tensors(v, function) for v in value]
        return type(value)(mapped) if type(value) in (list, tuple) else mapped
    return value


def _tensors_in(value, path=()):
    """(path, tensor) for every tensor in an output: a tensor, a dict (Hugging Face's ModelOutput
    is one), a list or a tuple."""
    import torch
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _tensors_in(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _tensors_in(item, path + (index,))


def _json_safe(value):
    """The config as JSON can hold it: accelerate writes "steps_per_print": float("inf"), and
    JSON has no infinity (written as the string "inf"); other objects by their repr."""
    import math
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _cast_of(source, tensor):
    """Whether source is tensor cast to another dtype and maybe reshaped
    (`logits.float().view(-1, vocab)`, transformers' ForCausalLMLoss for a bfloat16 model):
    a chain of cast and view nodes from source's autograd node to tensor's."""
    target, node = tensor.grad_fn, source.grad_fn
    for _ in range(4):
        if target is None or node is None or \
                type(node).__name__ not in _CAST_AND_VIEW_NODES or not node.next_functions:
            return False
        node = node.next_functions[0][0]
        if node is target:
            return True
    return False


# Nodes through which a loss stays its input times a constant: scaled, negated, cast, viewed,
# summed or averaged (a reduction="none" loss reduced by the loop).
_SCALING_NODES = {"MulBackward0", "DivBackward0", "NegBackward0", "CloneBackward0",
                  "ToCopyBackward0", "ViewBackward0", "UnsafeViewBackward0",
                  "ReshapeAliasBackward0", "SqueezeBackward0", "SqueezeBackward1",
                  "SumBackward0", "SumBackward1", "MeanBackward0", "MeanBackward1"}


def _other_loss_terms(node, loss_node):
    """What lies between the loss given to backward (its autograd node) and the recognised loss
    function's result (loss_node), in words; "" when the path is a chain of scalings, each
    node with one input that has a gradient. A node with two (AddBackward0: a second loss
    added), a scaling by a tensor of several elements (per-element weights), a node that is no
    scaling, or no path at all is said."""
    for _ in range(64):
        if node is None:
            return "it does not depend on that value"
        if node is loss_node:
            return ""
        name = type(node).__name__
        inputs = [n for n, _ in node.next_functions if n is not None]
        if len(inputs) != 1:
            return f"it adds or combines other terms ({name})"
        # DeepSpeed's own autograd functions on a module's outputs (ZeRO 3's
        # PreBackwardFunctionForModuleBackward, which gathers parameters for the backward) pass
        # their input through unchanged.
        by_deepspeed = getattr(getattr(node, "_forward_cls", None), "__module__",
                               "").startswith("deepspeed.")
        if name not in _SCALING_NODES and not by_deepspeed:
            return f"it passes through {name}"
        for saved in ("_saved_other", "_saved_self") if name in ("MulBackward0",
                                                                 "DivBackward0") else ():
            try:
                factor = getattr(node, saved, None)
            except RuntimeError:  # not saved by this node
                factor = None
            if hasattr(factor, "numel") and factor.numel() > 1 and not factor.requires_grad:
                return f"it is weighted element by element ({name})"
        node = inputs[0]
    return "it is more than 64 operations away from it"


_CAST_AND_VIEW_NODES = {"ToCopyBackward0", "ViewBackward0", "UnsafeViewBackward0",
                        "ReshapeAliasBackward0"}


def _as_returned(result):
    """A loss function's result as it returned it: its value summed in float64 (None for no
    tensor) and its autograd node."""
    if not hasattr(result, "detach"):
        return None, None
    return float(result.detach().double().sum()), getattr(result, "grad_fn", None)


def _select(value, path):
    for key in path:
        value = value[key]
    return value


# The golden's self-check allows a correct run's rounding and no more. A sum of n terms computed
# in precision u errs by at most lambda sqrt(n) u times the sum of the terms' magnitudes, with
# probability at least 1 - 2 exp(-lambda^2 (1-u)^2 / 2) (Higham and Mary, "A new approach to
# probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019): the errors of the
# roundings are independent, so they add up as a random walk, not in a line. lambda is chosen
# for the chance that a correct micro-step fails, not tuned: 1e-6.
_SELF_CHECK_FAILURE_CHANCE = 1e-6
_LAMBDA = math.sqrt(2.0 * math.log(2.0 / _SELF_CHECK_FAILURE_CHANCE))  # 5.39


def _forward_reduction_length(module):
    """How many roundings in series a forward's output may carry: the sum of every weight's
    fan-in (a Linear's in_features, a convolution's in_channels x kernel, an embedding's width),
    each matrix product summing that many terms into each output along the way."""
    length = 0
    for p in module.parameters():
        shape = tuple(getattr(p, "ds_shape", None) or p.shape)  # ZeRO 3: the full shape
        if len(shape) >= 2 and shape[0] > 0:
            count = 1
            for size in shape:
                count *= size
            length += count // shape[0]
    return max(length, 1)


def _loss_allowance(loss, sensitivity, forward_length, loss_length, forward_dtype, loss_dtype):
    """How far a correct run's loss may be from the exact one: the forward's rounding (each of
    the loss's input elements off by lambda sqrt(forward_length) u rms(input), moving the loss by
    that times the loss's first-order sensitivity, sum |dL/dinput| x rms(input)) plus the loss's
    own (a log-sum-exp over the classes and a sum over the terms, lambda sqrt(loss_length) u
    |loss|). u is the unit roundoff of the dtype each part is computed in."""
    import torch
    forward_u = torch.finfo(forward_dtype).eps / 2
    loss_u = torch.finfo(loss_dtype).eps / 2
    return _LAMBDA * (forward_u * forward_length ** 0.5 * sensitivity +
                      loss_u * loss_length ** 0.5 * abs(loss))


class Watcher:
    def __init__(self, initialized, deepspeed, config_given=None):
        import torch
        self._torch = torch
        self._deepspeed = deepspeed
        engine, optimizer, _, scheduler = (tuple(initialized) + (None,) * 4)[:4]
        self.engine = engine
        self.rank, self.world_size = _rank_and_world()
        settings = _settings()
        self.folder, self.steps_wanted = settings["dir"], settings["steps"]
        self.save, self.config_given = settings["save"], config_given
        self.loss_kind = settings["loss"]
        self.golden_kind = settings["golden"]
        if self.golden_kind not in ("own", "float64"):
            raise ValueError(f"TRAINREPRO_WATCH_GOLDEN: expected own or float64, found "
                             f"{self.golden_kind!r}")
        self.zero_stage = int(engine.zero_optimization_stage())
        self.named = [(n, p) for n, p in engine.module.named_parameters() if p.requires_grad]
        self._coordinates_on_device = {}
        self.coordinates = _coordinates_judged(
            [tuple(getattr(p, "ds_shape", None) or p.shape) for _, p in self.named],
            settings["coordinates"], torch)
        self.calls = []
        self.windows = []
        self.window = None
        self.micro = None
        self.inside = set()
        self.finished = False
        self._pending_judged = None
        self.golden_not_computed = ""
        self._patch(engine, "forward", self._forward)
        self._module_hooks = [
            engine.module.register_forward_pre_hook(self._module_forward_begins, with_kwargs=True),
            engine.module.register_forward_hook(self._module_forward_ends, with_kwargs=True,
                                                always_call=True)]
        self._patch(engine, "backward", self._backward)
        self._patch(engine, "step", self._engine_step)
        self._patch(engine, "zero_grad", self._called("engine.zero_grad()"))
        if hasattr(engine, "set_gradient_accumulation_boundary"):
            # The loop ending a window itself (accelerate's accumulate(), the Trainer): a
            # window closed before gradient_accumulation_steps micro-batches is judged by it.
            self._patch(engine, "set_gradient_accumulation_boundary", self._boundary_set)
        if hasattr(engine, "no_sync"):  # DeepSpeed 0.16.0+: the loop's own sync switch
            self._patch(engine, "no_sync", self._called("engine.no_sync()"))
        for seen in {id(o): o for o in (optimizer, engine.optimizer) if o is not None}.values():
            if isinstance(seen, torch.optim.Optimizer):
                # Hooks, not a replaced step: an LR scheduler marks the step it wraps and warns
                # when it is replaced.
                seen.register_step_pre_hook(lambda *_: self._before_optimizer_step())
                seen.register_step_post_hook(lambda *_: self._after_optimizer_step())
            else:
                self._patch(seen, "step", self._optimizer_step)
            self._patch(seen, "zero_grad", self._called("optimizer.zero_grad()"))
        for seen in {id(s): s for s in (scheduler, engine.lr_scheduler) if s is not None}.values():
            self._patch(seen, "step", self._called("lr_scheduler.step()"))
        self._tensor_backward = torch.Tensor.backward
        watcher = self

        def backward(tensor, *args, **kwargs):
            if not watcher.finished and "engine.backward" not in watcher.inside \
                    and "golden" not in watcher.inside:
                watcher.calls.append("loss.backward()")
                if watcher.micro is not None:
                    watcher.micro["loss"] = float(tensor.detach().float())
                    watcher._note_other_loss_terms(watcher.micro, tensor)
                    watcher.micro.pop("outputs", None)
            return watcher._tensor_backward(tensor, *args, **kwargs)

        torch.Tensor.backward = backward
        atexit.register(self._write, "the script exited")
        self.memory_steps = settings["memory_steps"]
        self.census = None
        if self.memory_steps > 0:
            import memory_census
            self.census = memory_census.MemoryCensus(self._own_tensors)
            atexit.register(self._write_memory)

    # --- the wrappers -----------------------------------------------------------------------

    def _patch(self, owner, name, wrapper):
        original = getattr(owner, name)
        setattr(owner, name, functools.partial(wrapper, original))

    def _called(self, call):
        def wrapper(original, *args, **kwargs):
            if not self.finished and not self.inside:
                self.calls.append(call)
            return original(*args, **kwargs)
        return wrapper

    def _boundary_set(self, original, is_boundary, *args, **kwargs):
        if is_boundary and not self.finished and not self.inside:
            self.calls.append("engine.set_gradient_accumulation_boundary(True)")
        return original(is_boundary, *args, **kwargs)

    def _forward(self, original, *args, **kwargs):
        recording = self._begin_micro_step(args, kwargs)
        self.inside.add("forward")
        try:
            outputs = original(*args, **kwargs)
        finally:
            self.inside.discard("forward")
        if recording:
            self._end_micro_step(outputs)
        return outputs

    # A loop that calls the engine's module itself (`engine.module(x)`: DeepSpeed's hooks are on
    # the module, so at every ZeRO stage this trains as engine(x) does) is seen by hooks on the
    # module; inside engine(x) they stand aside. Removed when the watched steps end, before the
    # golden's float64 copy and --save-scenario's trace call the module.
    def _module_forward_begins(self, module, args, kwargs):
        if "forward" not in self.inside and self._begin_micro_step(args, kwargs):
            self.inside.add("module forward")
        micro = self.micro
        if micro is not None and "rng" not in micro and "golden" not in self.inside and \
                not self.finished:
            # The generators as the module's forward found them: the golden's forward of this
            # micro-batch starts from the same state, so dropout draws the same masks.
            micro["rng"] = self._rng_state()

    def _rng_state(self):
        torch = self._torch
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        return torch.get_rng_state(), cuda

    def _set_rng_state(self, state):
        torch = self._torch
        cpu, cuda = state
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)

    def _module_forward_ends(self, module, args, kwargs, outputs):
        if "module forward" in self.inside:  # also called when the forward raised (no outputs)
            self.inside.discard("module forward")
            if outputs is not None:
                self._end_micro_step(outputs)

    def _begin_micro_step(self, args, kwargs):
        """Records a training forward's inputs as a new micro-step; False for an evaluation (under
        no_grad, in eval(), or, found later, a forward no backward followed) or a nested call."""
        recording = (not self.finished and self._torch.is_grad_enabled()
                     and self.engine.module.training and "forward" not in self.inside
                     and "module forward" not in self.inside and "golden" not in self.inside)
        if recording:
            with self._record():
                if self.window is None:
                    # The start weights are copied only for a golden that needs them apart from
                    # the module's own (float64) and for --save-scenario's model: the own-dtype
                    # golden runs at the boundary, before the update, on the module's weights,
                    # which are still the window's start weights then.
                    keep = self.golden_kind == "float64" or (self.save and not self.windows)
                    self.window = {"start": self._full_weights() if keep else None,
                                   "micro_steps": []}
                elif self.micro is not None and self.micro["loss"] is None:
                    self.window["micro_steps"].remove(self.micro)
                self.calls.append("forward")
                clone = lambda t: t.detach().clone()  # noqa: E731
                labels = kwargs.get("labels") if isinstance(kwargs, dict) else None
                self.micro = {"args": _map_tensors(args, clone),
                              "kwargs": _map_tensors(kwargs, clone),
                              "loss_function": None, "loss": None,
                              # Hugging Face's labels, as the Trainer counts them
                              # (num_items_in_batch)
                              "labels_counted": int((labels != -100).sum())
                              if isinstance(labels, self._torch.Tensor) else None}
                self.window["micro_steps"].append(self.micro)
        return recording

    def _end_micro_step(self, outputs):
        self.micro["outputs"] = outputs
        for name, arguments, result in self.micro.pop("calls_inside_forward", []):
            if self.micro["loss_function"] is None:
                self._match_loss_function(self.micro, name, arguments, result,
                                          inside_forward=True)

    def recording_micro_step(self):
        return not self.finished and self.micro is not None and "golden" not in self.inside

    def saw_loss_function(self, name, arguments, result):
        """A torch.nn.functional loss was called: the loop's loss when its input is (a view of)
        a tensor the current micro-step's forward returned, and the first such call. A call made
        inside the forward (a Hugging Face model computing its own loss from `labels`) is
        matched once the forward has returned its outputs."""
        micro = self.micro
        if self.finished or micro is None or micro["loss_function"] is not None:
            return
        if not isinstance(arguments.get("input"), self._torch.Tensor):
            return
        if "outputs" not in micro:
            # Its value and node as returned: the forward may add to that very tensor in place
            # afterwards (transformers' Mixtral: `loss += coef * aux_loss`).
            micro.setdefault("calls_inside_forward", []).append(
                (name, arguments, _as_returned(result)))
            return
        self._match_loss_function(micro, name, arguments, _as_returned(result),
                                  inside_forward=False)

    def _match_loss_function(self, micro, name, arguments, result, inside_forward):
        source = arguments["input"]
        pointer = source.untyped_storage().data_ptr()
        for path, tensor in _tensors_in(micro["outputs"]):
            if tensor.numel() == source.numel() and (
                    tensor.untyped_storage().data_ptr() == pointer or
                    _cast_of(source, tensor)):
                with self._record():
                    micro["loss_function"] = {
                        "name": name, "output": list(path), "input_shape": list(source.shape),
                        # The dtype the loss computed in: a bfloat16 model's logits cast up
                        # first (transformers' ForCausalLMLoss: logits.float()).
                        "input_dtype": str(source.dtype).replace("torch.", ""),
                        "target": arguments["target"].detach().clone(),
                        "reduction": arguments.get("reduction", "mean"),
                        "ignore_index": arguments.get("ignore_index", -100),
                        "label_smoothing": float(arguments.get("label_smoothing", 0.0) or 0.0),
                        "weighted": arguments.get("weight") is not None,
                        "inside_forward": inside_forward,
                        # What it returned, summed (reduction "none" too), in float64: the
                        # golden's self-check reproduces this number.
                        "value": result[0]}
                # Its autograd node, until the backward: the loss the loop passes there must be
                # this one times constants (_other_loss_terms).
                micro["loss_node"] = result[1]
                return

    def _backward(self, original, loss, *args, **kwargs):
        if not self.finished:
            self.calls.append("engine.backward()")
            if self.micro is not None:
                self.micro["loss"] = float(loss.detach().float())
                self._note_other_loss_terms(self.micro, loss)
                # The forward's outputs were kept to find the loss's input among them; held on
                # to the boundary they would be the watch's (a language model's logits are its
                # largest activation).
                self.micro.pop("outputs", None)
                # engine.backward(loss, retain_graph, scale_wrt_gas): False asks DeepSpeed not
                # to divide by gradient_accumulation_steps (transformers' Trainer passes it).
                scale = kwargs.get("scale_wrt_gas", args[1] if len(args) > 1 else True)
                self.micro["scale_wrt_gas"] = bool(scale)
        self.inside.add("engine.backward")
        try:
            return original(loss, *args, **kwargs)
        finally:
            self.inside.discard("engine.backward")

    def _note_other_loss_terms(self, micro, loss):
        """Before the backward: what the loss passed to it adds to the recognised loss
        function's value, if anything (the golden follows that function alone, so a loss made
        of several terms is not judged rather than judged wrong)."""
        node = micro.pop("loss_node", None)
        if micro["loss_function"] is not None and node is not None:
            micro["loss_function"]["other_terms"] = _other_loss_terms(
                getattr(loss, "grad_fn", None), node)

    def _own_tensors(self):
        """The watch's records, never the training's memory."""
        yield from (c for c in self.coordinates if c is not None)
        yield from self._coordinates_on_device.values()
        for window in self.windows + ([self.window] if self.window else []):
            yield from window.get("start") or []
            yield from window.get("run_gradients", [])
            for piece in window.get("pieces") or []:
                yield from piece["gradients"]
                yield from piece.get("twin_gradients", [])
            for micro in window["micro_steps"]:
                for value in (micro["args"], micro["kwargs"]):
                    yield from (t for _, t in _tensors_in(value))
                if micro["loss_function"] is not None and \
                        micro["loss_function"]["target"] is not None:
                    yield micro["loss_function"]["target"]

    def _record(self):
        """What the watch keeps for itself is left out of the host heap the census reads."""
        import contextlib
        return self.census.record_of_harness() if self.census else contextlib.nullcontext()

    def _sample_memory(self):
        if self.census is None:
            return
        steps = int(self.engine.global_steps)
        self.census.sample("boundary", int(self.engine.micro_steps), steps)
        if steps >= self.memory_steps:
            self._write_memory()

    def _write_memory(self):
        census, self.census = self.census, None
        if census is None:
            return
        # Every census here runs inside the user's loop, where the tensors of the step in progress
        # (its batch, outputs, loss) are alive by definition: only steps that ended before the
        # last boundary can leave survivors, so the last boundary's sample is left out (the
        # reference engine and `run --engine deepspeed` sample after those tensors are gone).
        memory = census.result()
        boundaries = [i for i, s in enumerate(memory["samples"]) if s["point"] == "boundary"]
        if boundaries:
            del memory["samples"][boundaries[-1]:]
        path = os.path.join(self.folder, f"rank{self.rank}.memory.json")
        _write_atomically(path, json.dumps(memory).encode())

    def _engine_step(self, original, *args, **kwargs):
        if self.finished:
            boundary = self.census is not None and self.engine.is_gradient_accumulation_boundary()
            result = original(*args, **kwargs)
            if boundary:
                self._sample_memory()
            return result
        self.calls.append("engine.step()")
        boundary = self.engine.is_gradient_accumulation_boundary()
        judged = self._judge_boundary() if boundary and self.window is not None else None
        self.inside.add("engine.step")
        try:
            result = original(*args, **kwargs)
        finally:
            self.inside.discard("engine.step")
        if judged is not None:
            self._close_window(judged, "engine.step()")
        if boundary:
            self._sample_memory()
        return result

    def _optimizer_step(self, original, *args, **kwargs):
        self._before_optimizer_step()
        result = original(*args, **kwargs)
        self._after_optimizer_step()
        return result

    def _before_optimizer_step(self):
        """The loop steps the optimizer itself (not inside engine.step()): the window ends."""
        self._pending_judged = None
        if self.finished or self.inside:  # the engine's own step, or after the watched steps
            return
        self.calls.append("optimizer.step()")
        if self.window is not None:
            self._pending_judged = self._judge_boundary()

    def _after_optimizer_step(self):
        judged, self._pending_judged = self._pending_judged, None
        if judged is not None:
            self._close_window(judged, "optimizer.step()")

    def _judge_boundary(self):
        """At the boundary, before the optimizer updates the weights: the gradients the update
        will use and the golden's pieces (the weights are still the window's start weights
        here). What stays of the window is its judged coordinates, never its gradients whole:
        the watch holds at most one extra copy of the model's gradients, and only while one
        micro-step's golden is computed."""
        window = self.window
        window["micro_steps"] = [m for m in window["micro_steps"] if m["loss"] is not None]
        with self._record():
            gradients = self._full_gradients()
            pieces, golden = self._golden_at_boundary(window)
        return gradients, pieces, golden

    # --- what is recorded -------------------------------------------------------------------

    def _full_weights(self):
        from deepspeed.utils import safe_get_full_fp32_param
        with self._torch.no_grad():
            if self.zero_stage == 0:  # fp32 trains the module's own; bf16/fp16 a master copy
                masters = self._stage0_masters()
                return [(p if p.dtype == self._torch.float32 else
                         masters.get(id(p), safe_get_full_fp32_param(p)))
                        .detach().double().clone() for _, p in self.named]
            # ZeRO 1-3: the master's partitions gathered (a collective: every rank records its
            # window's start at the same forward).
            return [safe_get_full_fp32_param(p).double().clone() for _, p in self.named]

    def _stage0_masters(self):
        """At ZeRO stage 0 in bf16/fp16 DeepSpeed 0.19.8 wraps the optimizer in FP16_Optimizer
        (runtime/fp16/fused_optimizer.py), whose float32 masters are one flat tensor per group
        (fp32_groups_flat[g]) laid out as that group's parameters (fp16_groups[g]), in order;
        safe_get_full_fp32_param knows only BF16_Optimizer's and ZeRO's. {id(parameter): its
        master}; empty for another optimizer."""
        optimizer = self.engine.optimizer
        groups = getattr(optimizer, "fp16_groups", None)
        flats = getattr(optimizer, "fp32_groups_flat", None)
        masters = {}
        if not groups or not flats or len(groups) != len(flats):
            return masters
        for group, flat in zip(groups, flats):
            offset = 0
            for parameter in group:
                masters[id(parameter)] = flat[offset:offset + parameter.numel()].view_as(parameter)
                offset += parameter.numel()
        return masters

    def _full_gradients(self):
        """What the update will use, before clipping, on the judged coordinates: p.grad at stage
        0 (divided by a mixed precision wrapper's loss scale, as its step does), DeepSpeed's
        assembled gradient at ZeRO 1-3 (gathered one parameter at a time, a collective)."""
        from deepspeed.utils import safe_get_full_grad
        scale = float(getattr(self.engine.optimizer, "cur_scale", 1.0) or 1.0)
        gradients = []
        for j, (_, p) in enumerate(self.named):
            g = p.grad / scale if self.zero_stage == 0 and p.grad is not None else (
                None if self.zero_stage == 0 else safe_get_full_grad(p))
            gradients.append(self._judged_coordinates(j, g))
        return gradients

    def _judged_coordinates(self, j, gradient):
        """Parameter j's gradient on its judged coordinates, in float64 on the CPU (zeros for a
        parameter that received none)."""
        torch, chosen = self._torch, self.coordinates[j]
        if gradient is None:
            _, p = self.named[j]
            shape = (len(chosen),) if chosen is not None else \
                tuple(getattr(p, "ds_shape", None) or p.shape)
            return torch.zeros(shape, dtype=torch.float64)
        flat = gradient.detach().reshape(-1)
        if chosen is None:
            return flat.to("cpu", torch.float64, copy=True).reshape(gradient.shape)
        if flat.device.type != "cpu":  # the indices copied to the device once, not per call
            key = (j, str(flat.device))
            if key not in self._coordinates_on_device:
                self._coordinates_on_device[key] = chosen.to(flat.device)
            chosen = self._coordinates_on_device[key]
        return flat[chosen].to("cpu", torch.float64)

    def _close_window(self, judged, closed_by):
        window, self.window, self.micro = self.window, None, None
        window["run_gradients"], window["pieces"], window["golden"] = judged
        window["closed_by"] = closed_by
        window["calls_at_close"] = len(self.calls)
        window["start"] = window["start"] if self.save and not self.windows else None
        if not self.save:  # the inputs and targets served the golden; --save-scenario keeps them
            for micro in window["micro_steps"]:
                micro["args"] = micro["kwargs"] = None
                if micro["loss_function"] is not None:
                    micro["loss_function"]["target"] = None
        self.windows.append(window)
        if len(self.windows) >= self.steps_wanted:
            self._write("")

    def _golden_at_boundary(self, window):
        """The window's golden pieces (or none, the reason in golden_not_computed): computed
        here, at the boundary, so that no window's inputs or gradients outlive it. At ZeRO 3 the
        module's weights are gathered first, a collective every rank enters at every boundary
        whatever its own golden does next, so that no rank waits for another forever. The
        random number generators are put back afterwards: the golden's forwards draw from them
        (dropout), and the training must draw what it would have drawn unwatched."""
        torch = self._torch
        devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
        self.inside.add("golden")
        try:
            with torch.random.fork_rng(devices=devices), self._own_weights() as own:
                pieces, golden = [], None
                if not self.golden_not_computed:
                    try:
                        pieces, golden = self._golden_pieces(window, own)
                    except Exception as error:  # noqa: BLE001: the verdict says why
                        self.golden_not_computed = f"window {len(self.windows)}: {error}"
                if self.golden_kind == "float64":
                    pieces, golden = self._one_golden_on_every_rank(window, own, pieces, golden)
                return pieces, golden
        finally:
            self.inside.discard("golden")

    def _one_golden_on_every_rank(self, window, own, pieces, golden):
        """--golden float64 on several ranks: where one rank's float64 golden failed its
        self-check, every rank's float32 pieces become its own-dtype ones, so that the golden
        the judge sums over the ranks is of one dtype (a collective every rank enters at every
        boundary, whatever its golden did). A bfloat16 model's ranks all hold their twins
        already."""
        torch = self._torch
        dist = torch.distributed
        if self.world_size < 2 or not (dist.is_available() and dist.is_initialized()):
            return pieces, golden
        failed_here = golden is not None and golden["float64_failed"] is not None
        flag = torch.tensor([1.0 if failed_here else 0.0], device=self.engine.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() == 0.0 or failed_here or golden is None or \
                self._module_dtype() == torch.bfloat16:
            return pieces, golden
        try:
            pieces = self._own_pieces_instead(window, own, pieces)
        except Exception as error:  # noqa: BLE001: the verdict says why
            self.golden_not_computed = f"window {len(self.windows)}: {error}"
            return [], None
        return pieces, {"dtype": str(self._module_dtype()).replace("torch.", ""),
                        "float64_failed": None}

    @contextlib.contextmanager
    def _own_weights(self):
        """The module's weights as the run computes with them, for the own-dtype golden: the
        trainable ones as new leaves sharing the parameters' memory (their gradients go nowhere
        near DeepSpeed's), the frozen ones as they are, the buffers copied (a BatchNorm's
        forward in train mode updates its running statistics in place; the run's stay as the
        run left them). At ZeRO 3 None: the golden runs on the module itself, its partitions
        gathered layer by layer by DeepSpeed as for the run (gathering the whole model would
        need one more copy of every parameter on every rank), and its buffers are put back
        afterwards."""
        module = self.engine.module
        if self.zero_stage == 3:
            kept = [(b, b.detach().clone()) for b in module.buffers()]
            try:
                yield None
            finally:
                with self._torch.no_grad():
                    for buffer, value in kept:
                        buffer.copy_(value)
            return
        trainable = {n for n, _ in self.named}
        weights = {n: p.detach().requires_grad_(True) for n, p in self.named}
        values = {n: p.detach() for n, p in module.named_parameters() if n not in trainable}
        for name, b in module.named_buffers():
            values[name] = b.detach().clone()
        yield weights, values

    def _float64_weights(self, window):
        """The window's start weights in float64 (recorded at its first forward), the frozen
        parameters and buffers cast up: the float64 golden's."""
        torch, module = self._torch, self.engine.module
        names = [n for n, _ in self.named]
        weights = {n: w.to(torch.float64, copy=True).requires_grad_(True)
                   for n, w in zip(names, window["start"])}
        values = {}
        frozen = [(name, p) for name, p in module.named_parameters() if name not in weights]
        with self._gathered([p for _, p in frozen]):
            for name, p in frozen:
                values[name] = p.detach().double().clone()
        for name, b in module.named_buffers():
            values[name] = b.detach().double() if b.is_floating_point() else b.detach().clone()
        return weights, values

    def _golden_pieces(self, window, own):
        """Per micro-step: the gradient of its summed loss at the window's start weights (on the
        judged coordinates), its items and its summed loss. Raises ValueError saying why it
        cannot be computed. Returns (pieces, the window's golden record).

        --golden own (the default): each micro-step's forward and backward computed again in
        the run's own dtype and kernels, on the module's weights: the run's own function (a
        float32 mask built inside forward, a kernel that differs by dtype are the run's too),
        at the cost of one more forward and backward per micro-step and one copy of the
        gradients while it lasts. It checks itself: the loss it computes must be the loop's
        within twice the run's rounding (_loss_allowance), or the forward is not a function of
        the weights and inputs alone (dropout in train mode) and nothing is judged.

        --golden float64: the same in float64 at the recorded start weights (inputs cast up),
        which proves itself against the loop's loss within the run's rounding; when it is not
        the run's function, the own-dtype pieces judge instead. A bfloat16 model's float64
        pieces come with their own-dtype twins (the precision's own error)."""
        torch = self._torch
        module = self.engine.module
        losses = []
        for i, micro in enumerate(window["micro_steps"]):
            loss = micro["loss_function"]
            if loss is None:
                raise ValueError(
                    f"micro-step {i}'s loss was not computed by torch.nn.functional's "
                    "cross_entropy or mse_loss (or nn.CrossEntropyLoss / nn.MSELoss) on the "
                    "outputs of engine(...)")
            if loss["weighted"]:
                raise ValueError(f"micro-step {i}'s {loss['name']} has class weights, which the "
                                 "golden does not follow yet")
            if loss.get("other_terms"):
                raise ValueError(
                    f"micro-step {i}'s loss passed to backward is not {loss['name']}'s value "
                    f"times a constant: {loss['other_terms']}. The golden follows one loss "
                    "function; a loss of several terms (a second head's loss, a mixture of "
                    "experts' load-balancing loss) is not judged")
            losses.append(loss)
        own_dtype = self._module_dtype()
        own_name = str(own_dtype).replace("torch.", "")
        forward_length = _forward_reduction_length(module)
        if self.golden_kind == "own":
            return self._own_pieces(window, losses, own, forward_length, own_dtype, None), \
                {"dtype": own_name, "float64_failed": None}
        low_precision = own_dtype == torch.bfloat16
        golden = {"dtype": "float64", "float64_failed": None}
        weights64 = self._float64_weights(window)
        pieces = []
        for i, (micro, loss) in enumerate(zip(window["micro_steps"], losses)):
            summed, items, grads, check = self._piece(weights64, micro, loss, i, golden=True)
            check = self._self_check(loss, check, forward_length, own_dtype, copies=1)
            piece = {"items": items, "loss_sum": float(summed.detach()), "gradients": grads,
                     "self_check": check}
            if low_precision:
                piece["twin_gradients"] = self._piece(own, micro, loss, i, golden=False)[2]
            pieces.append(piece)
            if check is not None and not check["passed"] and golden["float64_failed"] is None:
                golden["float64_failed"] = dict(check, micro_step=i)
                golden["dtype"] = own_name
                if not low_precision:
                    break
        if golden["float64_failed"] is None or low_precision:
            return pieces, golden
        return self._own_pieces_instead(window, own, pieces), golden

    def _own_pieces_instead(self, window, own, float64_pieces):
        """The own-dtype pieces in place of float64 ones that are not the run's function, each
        keeping its float64 self-check."""
        checks = [p["self_check"] for p in float64_pieces]
        float64_pieces.clear()  # their gradients go before the own-dtype ones come
        return self._own_pieces(window, [m["loss_function"] for m in window["micro_steps"]],
                                own, _forward_reduction_length(self.engine.module),
                                self._module_dtype(), checks)

    def _own_pieces(self, window, losses, own, forward_length, own_dtype, float64_checks):
        pieces = []
        for i, (micro, loss) in enumerate(zip(window["micro_steps"], losses)):
            summed, items, grads, check = self._piece(own, micro, loss, i, golden=False)
            # Two computations in the run's dtype, each within the allowance of the true value.
            own_check = self._self_check(loss, check, forward_length, own_dtype, copies=2)
            if own_check is not None and not own_check["passed"]:
                raise ValueError(
                    f"the golden does not reproduce the loop's loss: micro-step {i}'s loss is "
                    f"{own_check['loop_loss']!r} in the loop, {own_check['golden_loss']!r} "
                    f"computed again in {str(own_dtype).replace('torch.', '')} at the window's "
                    f"start weights (allowance {own_check['allowance']:.3g}); the forward is "
                    "not a function of the weights and inputs alone (dropout in train mode, "
                    "other randomness, or weights changed inside the window)")
            pieces.append({"items": items, "loss_sum": float(summed.detach()),
                           "gradients": grads,
                           "self_check": own_check if float64_checks is None else
                           (float64_checks[i] if i < len(float64_checks) else None),
                           "own_check": own_check})
        return pieces

    def _self_check(self, loss, check, forward_length, dtype, copies):
        """The golden's loss for one micro-step against the loop's, with the allowance of
        _loss_allowance (times `copies`: how many of the two were computed in the run's
        dtype); None when the loop's loss function returned no tensor."""
        if loss.get("value") is None:
            return None
        torch = self._torch
        allowance = copies * _loss_allowance(
            check["value"], check["sensitivity"], forward_length, check["loss_length"],
            dtype, getattr(torch, loss.get("input_dtype", "float32")))
        difference = abs(check["value"] - loss["value"])
        return {"loop_loss": loss["value"], "golden_loss": check["value"],
                "allowance": allowance, "ratio": difference / allowance if allowance > 0
                else float("inf") if difference > 0 else 0.0,
                "passed": difference <= allowance}

    def _grad_accum_dtype(self):
        """The dtype DeepSpeed sums a window's gradients in (engine.get_data_types(): the
        config's data_types.grad_accum_dtype, else the model's); None where it cannot say."""
        try:
            return str(self.engine.get_data_types()[1]).replace("torch.", "")
        except Exception:  # noqa: BLE001: an engine without it; the judge then assumes nothing
            return None

    def _shapes(self):
        return [tuple(getattr(p, "ds_shape", None) or p.shape) for _, p in self.named]

    def _module_dtype(self):
        return next(self.engine.module.parameters()).dtype

    def _piece(self, weights_and_values, micro, loss, i, golden):
        """One micro-step's summed loss, its items, the gradient of that sum on the judged
        coordinates (float64) and what the self-check needs: at the given weights (the float64
        golden's, inputs cast up, golden True; or the run's own as new leaves, inputs as the
        loop passed them), or, weights_and_values None (ZeRO 3), on the module as it trains,
        DeepSpeed's hooks gathering each layer's partitions for its forward and backward as
        they do for the run. No weight's whole gradient outlives its own completion."""
        torch = self._torch
        from torch.func import functional_call
        module = self.engine.module
        to64 = lambda t: t.double() if t.is_floating_point() else t  # noqa: E731
        inputs = to64 if golden else (lambda t: t)  # noqa: E731

        def forward_and_loss(args=micro["args"], kwargs=micro["kwargs"]):
            if micro.get("rng") is not None:
                self._set_rng_state(micro["rng"])
            outputs = module(*_map_tensors(args, inputs), **_map_tensors(kwargs, inputs))
            source = _select(outputs, loss["output"]).reshape(loss["input_shape"])
            if not golden:  # computed in the dtype the loop's loss was (logits.float())
                source = source.to(getattr(torch, loss.get("input_dtype", "float32")))
            if golden and source.dtype != torch.float64:
                raise ValueError(f"the model's output {loss['output']} is "
                                 f"{source.dtype}, not float64, with float64 weights and "
                                 "inputs: the model casts inside its forward")
            rows = _select(outputs, loss["output"]).shape[0]
            check = self._loop_loss_again(loss, source)
            summed, items = self._summed_loss(loss, source, rows, i)
            return summed, items, check

        judged = {}

        def judged_gradients():
            return [judged[j] if j in judged else self._judged_coordinates(j, None)
                    for j in range(len(self.named))]

        if weights_and_values is None:
            # A tensor hook on each parameter keeps its gradient's judged coordinates and hands
            # autograd a zero of no memory in its place; autograd.grad never runs the
            # accumulation nodes DeepSpeed's reduction hooks hang on.
            def keep_and_drop(j, gradient):
                judged[j] = self._judged_coordinates(j, gradient)
                return gradient.new_zeros(()).expand(gradient.shape)

            parameters = [p for _, p in self.named]
            hooks = [p.register_hook(functools.partial(keep_and_drop, j))
                     for j, p in enumerate(parameters)]
            try:
                with torch.enable_grad():
                    summed, items, check = forward_and_loss()
                    torch.autograd.grad(summed, parameters, allow_unused=True)
            finally:
                for hook in hooks:
                    hook.remove()
            return summed.detach(), items, judged_gradients(), check

        weights, frozen_values = weights_and_values
        names = [n for n, _ in self.named]
        values = dict(weights)
        values.update(frozen_values)

        def forward_and_backward():
            summed, items, check = forward_and_loss()
            # Each weight's gradient is cut down to its judged coordinates as soon as it is
            # complete, and dropped: the whole model's gradients never exist at once.
            def keep_judged(j, leaf):
                judged[j] = self._judged_coordinates(j, leaf.grad)
                leaf.grad = None

            hooks = [weights[n].register_post_accumulate_grad_hook(
                functools.partial(keep_judged, j)) for j, n in enumerate(names)]
            try:
                torch.autograd.backward(summed, inputs=[weights[n] for n in names])
            finally:
                for hook in hooks:
                    hook.remove()
            return summed.detach(), items, judged_gradients(), check

        # The backward runs while the weights are still swapped in: a checkpointed block
        # (gradient checkpointing) runs its forward again inside the backward.
        with torch.enable_grad(), self._without_deepspeed_module_hooks():
            return functional_call(_calling(module, forward_and_backward),
                                   {f"module.{name}": value for name, value in values.items()},
                                   ())

    def _loop_loss_again(self, loss, source):
        """The loop's own loss call (its reduction, ignore_index, label smoothing) on this
        golden's forward, summed as the loop's value was; and what the self-check's allowance
        needs: the loss's sensitivity to rounding in its input, rms(input) x sum |dL/dinput|
        (first order: an error of e x rms(input) in each input element moves the loss by at
        most that times e), and the loss's own reduction length (classes + terms)."""
        torch = self._torch
        target = loss["target"]
        original = _loss_originals[loss["name"]]
        if loss["name"] == "mse_loss":
            value = original(source, target.to(source.dtype), reduction=loss["reduction"])
            classes, terms = 1, source.numel()
        else:
            if target.is_floating_point():
                target = target.to(source.dtype)
            value = original(source, target, reduction=loss["reduction"],
                             ignore_index=loss["ignore_index"],
                             label_smoothing=loss["label_smoothing"])
            classes = source.shape[1] if source.dim() > 1 else source.shape[0]
            terms = target.shape[0] if target.is_floating_point() else target.numel()
        value = value.sum()
        slope, = torch.autograd.grad(value, source, retain_graph=True)
        rms = float(source.detach().double().pow(2).mean().sqrt())
        return {"value": float(value.detach().double()),
                "sensitivity": rms * float(slope.detach().double().abs().sum()),
                "loss_length": int(classes) + int(terms)}

    def _gathered(self, parameters):
        """The parameters whole while inside: at ZeRO 3 DeepSpeed's GatheredParameters (a
        collective: every rank computes its golden at the same point), else as they are."""
        if self.zero_stage != 3 or not parameters:
            return contextlib.nullcontext()
        return self._deepspeed.zero.GatheredParameters(parameters)

    @contextlib.contextmanager
    def _without_deepspeed_module_hooks(self):
        """At ZeRO 3 DeepSpeed hooks every submodule to gather its partitioned parameters before
        the forward and release them after; the golden's float64 copy brings its own whole
        weights, so those hooks (and only those: the model's own stay) are set aside while it
        runs, and put back."""
        if self.zero_stage != 3:
            yield
            return
        kept = []
        for submodule in self.engine.module.modules():
            for attribute in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                              "_backward_pre_hooks"):
                hooks = getattr(submodule, attribute, None)
                if not hooks or not any(map(_defined_by_deepspeed, hooks.values())):
                    continue
                kept.append((hooks, list(hooks.items())))  # put back in their order
                for key in [k for k, hook in hooks.items() if _defined_by_deepspeed(hook)]:
                    del hooks[key]
        try:
            yield
        finally:
            for hooks, items in kept:
                hooks.clear()
                hooks.update(items)

    def _summed_loss(self, loss, source, rows, i):
        """The micro-batch's loss summed over its items, and its items, as --loss defines the
        golden's: "auto" and "tokens" (cross entropy over every counted target; MSE over every
        element), "samples" (each of the output's `rows` samples averaged over its own counted
        targets or elements, then summed), "mse" (the loop's loss must be MSE), "model" (the
        loss the model computes inside its own forward, as Hugging Face models do from
        `labels`: a mean over its counted targets, so the whole batch's is these sums over
        their items)."""
        torch, kind, target = self._torch, self.loss_kind, loss["target"]
        if kind == "mse" and loss["name"] != "mse_loss" or \
                kind == "tokens" and loss["name"] != "cross_entropy":
            raise ValueError(f"--loss {kind}, but micro-step {i}'s loss is {loss['name']}")
        if kind == "model" and not loss["inside_forward"]:
            raise ValueError(f"--loss model, but micro-step {i}'s loss was computed by the loop "
                             "on the outputs, not by the model's own forward")
        if loss["name"] == "mse_loss":
            error = (source - target.to(source.dtype)) ** 2
            if kind != "samples":
                return error.sum(), error.numel()
            return error.reshape(rows, -1).mean(dim=1).sum(), rows
        original = _loss_originals["cross_entropy"]
        # Label smoothing changes each target's loss, never which targets count: torch's mean
        # still divides by the targets not ignored.
        smoothing = loss["label_smoothing"]
        if target.is_floating_point():  # class probabilities: one item per row
            return original(source, target.to(source.dtype), reduction="sum",
                            label_smoothing=smoothing), target.shape[0]
        ignore = loss["ignore_index"]
        per_target = original(source, target, reduction="none", ignore_index=ignore,
                              label_smoothing=smoothing)
        counted = target != ignore
        if kind != "samples":
            return per_target.sum(), int(counted.sum())
        counts = counted.reshape(rows, -1).sum(dim=1)
        sums = per_target.reshape(rows, -1).sum(dim=1)
        present = counts > 0
        return (sums[present] / counts[present]).sum(), int(present.sum())

    def _samples_to_save(self, tensors):
        """--save-scenario: each micro-step's input and target into the rank's tensors, or why a
        scenario cannot hold them ("" when it can)."""
        for w, window in enumerate(self.windows):
            for i, micro in enumerate(window["micro_steps"]):
                args, kwargs = micro["args"], micro["kwargs"]
                if kwargs or len(args) != 1 or not isinstance(args[0], self._torch.Tensor):
                    return ("the forward takes more than one tensor (a scenario's model takes "
                            "one input tensor)")
                loss = micro["loss_function"]
                if loss is None or loss["output"]:
                    return "the loss is not a torch.nn.functional loss of the forward's output"
                if loss["label_smoothing"] or loss["weighted"]:
                    return ("the loss has label smoothing or class weights, which a scenario's "
                            "loss does not have")
                tensors[f"window{w}/micro{i}/inputs"] = args[0]
                tensors[f"window{w}/micro{i}/targets"] = loss["target"]
        return ""

    def _save_model(self):
        """--save-scenario: the model at the first window's start weights, traced to TorchScript
        (rank<R>.model.pt); why not when it does not trace."""
        import copy
        if self.zero_stage == 3:
            return ("ZeRO stage 3 partitions the module's parameters: the model is not traced "
                    "there yet")
        try:
            model = copy.deepcopy(self.engine.module).float()
            named = dict(model.named_parameters())
            with self._torch.no_grad():
                for (name, _), weight in zip(self.named, self.windows[0]["start"]):
                    named[name].copy_(weight)
            example = self.windows[0]["micro_steps"][0]["args"][0]
            traced = self._torch.jit.trace(model.eval(), (example,), check_trace=False)
            traced.save(os.path.join(self.folder, f"rank{self.rank}.model.pt"))
        except Exception as error:  # noqa: BLE001: the verdict says why, nothing is saved
            return f"the model does not trace to TorchScript: {error}"
        return ""

    def _write(self, ended):
        if self.finished:
            return
        self.finished = True
        for hook in self._module_hooks:
            hook.remove()
        self._torch.Tensor.backward = self._tensor_backward
        tensors, windows = {}, []
        golden_error = self.golden_not_computed
        for w, window in enumerate(self.windows):
            names = [n for n, _ in self.named]
            for name, g in zip(names, window["run_gradients"]):
                tensors[f"window{w}/run/{name}"] = g
            pieces, golden = (window["pieces"], window["golden"]) if not golden_error \
                else ([], None)
            micro_steps = []
            for i, micro in enumerate(window["micro_steps"]):
                entry = {"loss": micro["loss"],
                         "scale_wrt_gas": micro.get("scale_wrt_gas", True),
                         "labels_counted": micro["labels_counted"],
                         "loss_function": None if micro["loss_function"] is None else {
                             k: v for k, v in micro["loss_function"].items() if k != "target"}}
                if i < len(pieces):
                    entry.update(items=pieces[i]["items"], loss_sum=pieces[i]["loss_sum"],
                                 self_check=pieces[i]["self_check"])
                    if "own_check" in pieces[i]:
                        entry["own_check"] = pieces[i]["own_check"]
                    for name, g in zip(names, pieces[i]["gradients"]):
                        tensors[f"window{w}/micro{i}/{name}"] = g
                    for name, g in zip(names, pieces[i].get("twin_gradients", [])):
                        tensors[f"window{w}/twin{i}/{name}"] = g
                micro_steps.append(entry)
            windows.append({"micro_steps": micro_steps, "closed_by": window["closed_by"],
                            "calls_at_close": window["calls_at_close"], "golden": golden})
        save_not_possible = ""
        if self.save:
            save_not_possible = self._samples_to_save(tensors)
            if not save_not_possible and self.rank == 0:
                save_not_possible = self._save_model()
        engine = self.engine
        record = {
            "format": FORMAT, "version": FORMAT_VERSION, "rank": self.rank,
            "world_size": self.world_size, "ended": ended,
            "versions": {"deepspeed": self._deepspeed.__version__,
                         "torch": self._torch.__version__.split("+")[0],
                         "python": platform.python_version()},
            "config": _json_safe(getattr(getattr(engine, "_config", None), "_param_dict", None)),
            "resolved": {"train_batch_size": engine.train_batch_size(),
                         "train_micro_batch_size_per_gpu":
                             engine.train_micro_batch_size_per_gpu(),
                         "gradient_accumulation_steps": engine.gradient_accumulation_steps(),
                         "gradient_clipping": float(engine.gradient_clipping() or 0.0),
                         "zero_stage": self.zero_stage,
                         "dtype": str(next(engine.module.parameters()).dtype).replace(
                             "torch.", ""),
                         "grad_accum_dtype": self._grad_accum_dtype()},
            "parameter_names": [n for n, _ in self.named],
            "calls": self.calls,
            "windows": windows,
            "golden_not_computed": golden_error,
            "golden_kind": self.golden_kind,
            "coordinates": {"judged": [len(c) if c is not None else _size(s)
                                       for c, s in zip(self.coordinates, self._shapes())],
                            "of": [_size(s) for s in self._shapes()]},
            "steps_wanted": self.steps_wanted,
            "memory_steps": self.memory_steps,
            "config_given": _json_safe(self.config_given),
            "save_not_possible": save_not_possible,
        }
        prefix = os.path.join(self.folder, f"rank{self.rank}")
        _write_safetensors_atomically(prefix + ".safetensors", tensors)
        _write_atomically(prefix + ".json", json.dumps(record).encode())
        self.windows = []
