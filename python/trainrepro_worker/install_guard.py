"""What keeps an install from outliving the command that started it or leaving files behind.

- pip runs in a process group of its own, and is sent SIGKILL by the kernel if this installer
  dies (PR_SET_PDEATHSIG), whatever kills it.
- This installer is sent SIGTERM when its parent dies (trainrepro killed with kill -9: no one
  else would tell it), and a thread watching its parent id does the same where the kernel signal
  was missed. SIGTERM, SIGINT and SIGHUP kill pip's whole group, then `Stopped` unwinds the
  install so that its cleanup runs (the partial release folder, the private temporary folder).
- Every temporary file (pip's build folders, the sdist) lives in one private folder inside the
  cache (TMPDIR for pip and for this process), removed at the end and again by the next install
  of the release: nothing is left in the user's $TMPDIR.
"""
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(BaseException):
    """A stop signal (or the parent's death) reached the installer; exit 128 + signal."""

    def __init__(self, number):
        super().__init__(number)
        self.number = number


_children = set()  # process group ids of running pip commands


try:  # looked up once: the child calls it between fork and exec, where loading is unsafe
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None  # not Linux: the watching thread still notices the parent's death


def _set_parent_death_signal(number):
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, int(number), 0, 0, 0)


def _kill_children():
    for group in list(_children):
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def _on_stop(number, _frame):
    _kill_children()
    raise Stopped(number)


def guard_installer():
    """Stop signals and the parent's death end pip and unwind this process (Stopped)."""
    parent = os.getppid()
    for number in STOP_SIGNALS:
        signal.signal(number, _on_stop)
    _set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the kernel was asked to tell
        os.kill(os.getpid(), signal.SIGTERM)

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch_parent, daemon=True).start()


def private_temporary_folder(path):
    """`path` emptied and made this process's and its children's TMPDIR (0700)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, mode=0o700)
    os.environ["TMPDIR"] = path
    tempfile.tempdir = path
    return path


def _die_with_installer():
    # In the child between fork and exec: SIGKILL if the installer dies before pip ends.
    _set_parent_death_signal(signal.SIGKILL)


def run_guarded(command, env=None):
    """subprocess.run(command, capture_output=True, text=True) in a group of its own that dies
    with this installer; stdout and stderr go through files (a pipe left open by a grandchild
    would hold the installer)."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=_die_with_installer)
        _children.add(process.pid)
        try:
            returncode = process.wait()
        finally:
            _children.discard(process.pid)
            if process.returncode is None:
                _kill_children_of(process)
        output.seek(0)
        text = output.read().decode(errors="replace")
    return subprocess.CompletedProcess(command, returncode, stdout=text, stderr="")


def _kill_children_of(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.wait()


def exit_code_of(stopped):
    return 128 + stopped.number

