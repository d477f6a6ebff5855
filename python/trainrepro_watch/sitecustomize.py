"""Started by `trainrepro watch`: every Python process of the watched command imports this at
startup (its folder is first on PYTHONPATH), and it arranges for trainrepro_watch to wrap
`deepspeed.initialize` as soon as the script imports deepspeed. Nothing else changes: the
script's own files, its environment's packages and its output are left alone.

A sitecustomize of the user's own environment is shadowed by this one, so it is run here, as
Python would have run it.

Each watched Python also outlives trainrepro only briefly: when trainrepro is gone (killed with
SIGKILL, which leaves it no time to stop the command itself), a daemon thread sends this process
SIGTERM, then SIGKILL 10 s later. trainrepro is named by TRAINREPRO_WATCH_PARENT ("pid:start
time in clock ticks"), so that a process that later gets its pid is not taken for it.

And so that trainrepro can say which rank a signal killed (torchrun and DeepSpeed's launcher
reap their ranks; trainrepro never sees those exits): a Python started with RANK set writes
process-<pid>.json (its pid and rank) into TRAINREPRO_WATCH_DIR, and every watched Python's
subprocess.Popen, once poll() or wait() finds a child ended by a signal, writes exit-<pid>.json
(the child's pid and the signal).
"""
import functools
import importlib.abc
import json
import importlib.machinery
import importlib.util
import os
import signal
import sys
import threading
import time

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run_the_users_sitecustomize():
    others = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


class _WrapDeepSpeedOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when `deepspeed` is being imported, lets the other finders find it
    and wraps its loader so that trainrepro_watch patches the module once it has executed."""

    def find_spec(self, name, path=None, target=None):
        if name != "deepspeed":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        import trainrepro_watch
        trainrepro_watch.patch_deepspeed(module)

    def __getattr__(self, name):  # get_resource_reader, is_package, …: the real loader's
        return getattr(self._loader, name)


def _start_time(pid):
    """/proc/<pid>/stat's starttime (field 22), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return None


def _end_with_trainrepro(parent):
    pid, _, started = parent.partition(":")
    while _start_time(pid) == started:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10.0)  # a handler that saves a checkpoint has as long as trainrepro gives
    os.kill(os.getpid(), signal.SIGKILL)


def _write_small_json(name, record):
    path = os.path.join(os.environ["TRAINREPRO_WATCH_DIR"], name)
    try:
        with open(path + ".partial", "w") as out:
            json.dump(record, out)
        os.replace(path + ".partial", path)
    except OSError:
        pass  # what trainrepro says is less precise; the user's run goes on


def _noting_signal_deaths(method):
    @functools.wraps(method)
    def noting(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        if self.returncode is not None and self.returncode < 0 and \
                not getattr(self, "_trainrepro_noted", False):
            self._trainrepro_noted = True
            _write_small_json(f"exit-{self.pid}.json", {"pid": self.pid,
                                                        "signal": -self.returncode})
        return result
    return noting


def _record_ranks_and_their_ends():
    import subprocess
    if os.environ.get("RANK", "").isdigit():
        _write_small_json(f"process-{os.getpid()}.json",
                          {"pid": os.getpid(), "rank": int(os.environ["RANK"])})
    subprocess.Popen.poll = _noting_signal_deaths(subprocess.Popen.poll)
    subprocess.Popen.wait = _noting_signal_deaths(subprocess.Popen.wait)


if os.environ.get("TRAINREPRO_WATCH_DIR"):
    sys.meta_path.insert(0, _WrapDeepSpeedOnImport())
    _record_ranks_and_their_ends()
    if os.environ.get("TRAINREPRO_WATCH_PARENT", "").partition(":")[2].isdigit():
        threading.Thread(target=_end_with_trainrepro, args=(os.environ["TRAINREPRO_WATCH_PARENT"],),
                         name="trainrepro-watch-parent", daemon=True).start()
_run_the_users_sitecustomize()
