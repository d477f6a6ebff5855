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

This file wraps deepspeed.initialize and the loss functions; the rest, one job a file:
trainrepro_watch_watcher.py (the watched engine), trainrepro_watch_memory.py (the memory census),
trainrepro_watch_golden.py (the golden's pieces at a boundary), trainrepro_watch_output.py (what
is written), trainrepro_watch_tensors.py (tensors in the loop's values, the coordinates judged,
the loss's graph), trainrepro_watch_files.py (atomic writes), trainrepro_watch_settings.py (what
every part shares).
"""
import atexit
import functools
import inspect
import json
import os
import sys
import traceback

from trainrepro_watch_files import _write_atomically
from trainrepro_watch_settings import (_loss_originals, _rank_and_world, _settings, _watchers,
                                       FORMAT, FORMAT_VERSION)
from trainrepro_watch_watcher import Watcher


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


def _write_failure(reason, trace):
    rank, world = _rank_and_world()
    folder = _settings()["dir"]
    _write_atomically(os.path.join(folder, f"rank{rank}.json"), json.dumps(
        {"format": FORMAT, "version": FORMAT_VERSION, "rank": rank, "world_size": world,
         "failure": reason, "traceback": trace}).encode())


def _write_initialize_raised(error):
    rank, world = _rank_and_world()
    _write_atomically(os.path.join(_settings()["dir"], f"rank{rank}.json"), json.dumps(
        {"format": FORMAT, "version": FORMAT_VERSION, "rank": rank, "world_size": world,
         "initialize_raised": f"{type(error).__name__}: {error}"}).encode())
