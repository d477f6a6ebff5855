"""The installer's import check (python/trainrepro_worker/import_check.py) on stand-in releases:

- a release that logs on import, on stdout (DeepSpeed 0.17.5's `[INFO] ... Setting
  ds_accelerator to cpu`), even a line that looks like an answer, and lives under a path with a
  space, imports: its version and files are read from the answer file, not from stdout;
- a release whose import raises names the exception's last line, never an empty reason;
- a release that dies by a signal, or exits quietly, before answering says how it ended, and
  that it printed nothing, or what it printed last.
Stand-in torch and deepspeed packages written here: no DeepSpeed, no torch, no network.

Usage: check_import_check.py
"""
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "python" / "trainrepro_worker"))
from checklist import Checklist  # noqa: E402  (this folder: the checks and their summary)
from import_check import check_import  # noqa: E402

INFO_LINE = ("[2026-12-06 06:20:12,343] [INFO] [real_accelerator.py:260:get_accelerator] "
             "Setting ds_accelerator to cpu (override)")


def run(command, env=None):
    """install_guard.run_guarded's contract: stdout and stderr together, no exception."""
    return subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, text=True)


def stand_in(site, deepspeed_body):
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("__version__ = '2.11.0'\n")
    (site / "deepspeed").mkdir()
    (site / "deepspeed" / "__init__.py").write_text(deepspeed_body)


def probe(folder, name, deepspeed_body):
    site = folder / name / "site with a space"
    stand_in(site, deepspeed_body)
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    return check_import(run, sys.executable, env, str(folder / name / "answer.json"))


def main():
    checks = Checklist("import check")
    expect = checks.expect

    with tempfile.TemporaryDirectory(prefix="trainrepro-import-check-") as folder:
        folder = pathlib.Path(folder)
        answer, reason = probe(folder, "logs", (
            f"print({INFO_LINE!r})\n"
            "print('TRAINREPRO-IMPORTED 0.0.0 elsewhere')\n"
            "import sys; print('[WARNING] on stderr', file=sys.stderr)\n"
            "__version__ = '0.17.5'\n"))
        expect(reason is None and answer is not None and answer["deepspeed"] == "0.17.5"
               and answer["deepspeed_file"].endswith("site with a space/deepspeed/__init__.py"),
               f"a release that logs INFO lines on stdout imports (answer {answer}, "
               f"reason {reason!r})")

        answer, reason = probe(folder, "raises", (
            f"print({INFO_LINE!r})\n"
            "from torch import _no_such_api  # a torch API the release needs, gone\n"))
        expect(answer is None and reason is not None and reason.startswith(
            "ImportError: cannot import name '_no_such_api' from 'torch'"),
            f"an import that raises names the exception's last line: {reason!r}")
        expect(reason is not None and INFO_LINE in reason,
               "... followed by the tail of what it printed")

        answer, reason = probe(folder, "killed",
                               "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
        expect(answer is None and reason == "it was killed by SIGSEGV before answering, and "
               "printed nothing", f"a crash with no output says how it ended: {reason!r}")

        answer, reason = probe(folder, "quiet-exit",
                               "import os\nprint('partial', flush=True)\nos._exit(0)\n")
        expect(answer is None and reason is not None
               and reason.startswith("it exited with code 0 before answering")
               and reason.endswith("partial"),
               f"an exit before answering says so, with its output: {reason!r}")

        answer, reason = probe(folder, "no-version", "version = '0.17.5'\n")
        expect(answer is None and reason is not None and reason.startswith("AttributeError"),
               f"a deepspeed without __version__ is named: {reason!r}")

    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
