"""`run --engine deepspeed` with a Python that lacks deepspeed, or a worker that leaves no trace,
half a trace or a broken tensor file: each a clear message and exit 3, nothing half-written; a
worker that raises is that scenario's error with its traceback. Needs no DeepSpeed (a stand-in
Python, fake_deepspeed_python.py), so it runs in the normal suite.

Usage: check_bad_worker.py TRAINREPRO
"""
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCENARIO = "scenarios/accumulation/gas-missing.json"


def run(trainrepro, mode, results):
    env = dict(os.environ, TRAINREPRO_DEEPSPEED_PYTHON=str(HERE / "fake_deepspeed_python.py"),
               FAKE_DEEPSPEED_MODE=mode)
    # --fresh-workers: the stand-in is a one-shot worker (JOB.json), not a serving set.
    return subprocess.run([trainrepro, "run", SCENARIO, "--engine", "deepspeed",
                           "--fresh-workers", "--results", str(results)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def main():
    trainrepro = sys.argv[1]
    failures = []
    cases = {  # mode: (exit code, text expected in the output)
        "no-deepspeed": (3, "has no deepspeed (ModuleNotFoundError"),
        "probe-crashes": (3, "was killed by signal 11 before answering when asked for its torch "
                             "and deepspeed, and printed nothing"),
        "absent": (3, "the worker ended without writing its trace (worker exit code 139)"),
        "truncated": (3, "not a JSON object (truncated"),
        "bad-tensors": (3, "trace.safetensors"),
        "raises": (3, "the DeepSpeed worker raised: RuntimeError: pretend failure"),
    }
    for mode, (code, text) in cases.items():
        with tempfile.TemporaryDirectory(prefix="trainrepro-bad-worker-") as folder:
            results = pathlib.Path(folder) / "results"
            completed = run(trainrepro, mode, results)
            output = completed.stdout + completed.stderr
            if completed.returncode != code:
                failures.append(f"{mode}: exit {completed.returncode}, expected {code}:\n{output}")
            elif text not in output:
                failures.append(f"{mode}: the output lacks {text!r}:\n{output}")
            elif mode in ("no-deepspeed", "probe-crashes") and results.exists():
                failures.append(f"{mode}: the results folder was written before the Python was "
                                "found wanting")
            else:
                print(f"ok  {mode}: exit {code}, {text!r}")
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
