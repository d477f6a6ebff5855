"""What both user-model tests share: running the real binary and counting failed checks."""
import os
import pathlib
import subprocess
import sys

TRAINREPRO = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
failures = []


def check(condition, what, output=""):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        failures.append(what)
        print(output[-3000:])


def trainrepro(*args, cwd):
    """Runs `trainrepro ARGS` in `cwd` with one LibTorch thread: (exit status, stdout + stderr)."""
    done = subprocess.run([str(TRAINREPRO), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return done.returncode, done.stdout + done.stderr


def summary():
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0
