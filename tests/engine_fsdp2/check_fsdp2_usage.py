"""`--engine fsdp2` where the answer comes before any training (quick tier): a misspelt engine
(exit 2, the engines named), `perf run` given `--engine fsdp2` twice (exit 2), a Python that cannot be
run or lacks torch (exit 3, naming it, nothing written), and a DeepSpeed config error, which
FSDP2 does not read (skipped with why, exit 0).

Usage: check_fsdp2_usage.py TRAINREPRO
"""
import os
import subprocess
import sys
import tempfile


def main():
    trainrepro = os.path.abspath(sys.argv[1])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    config_error = "scenarios/accumulation/batch-size-missing.json"
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        results = os.path.join(folder, "results")
        no_torch = os.path.join(folder, "python-without-torch")
        with open(no_torch, "w") as out:
            # The probe's own program (-c PROGRAM ENGINE ANSWER_FILE), run by a Python whose
            # path holds only the standard library: torch cannot be imported.
            out.write(f"#!/bin/sh\nexec {sys.executable} -I -c "
                      "'import sys; sys.path = [p for p in sys.path if \"-packages\" not in p]; "
                      "sys.argv = sys.argv[1:]; exec(sys.argv[0])' \"$2\" \"$3\" \"$4\"\n")
        os.chmod(no_torch, 0o755)
        cases = [
            (["run", config_error, "--engine", "fsdp3"], {}, 2,
             "expected reference, deepspeed, deepspeed==VERSION"),
            (["perf", "run", "scenarios/perf/mlp-adamw-gas4.json", "--engine", "fsdp2",
              "--engine", "fsdp2"], {}, 2, "fsdp2 is given twice"),
            (["run", config_error, "--engine", "fsdp2", "--results", results],
             {"TRAINREPRO_FSDP2_PYTHON": os.path.join(folder, "no-such-python")}, 3,
             "no-such-python (TRAINREPRO_FSDP2_PYTHON)"),
            (["run", config_error, "--engine", "fsdp2", "--results", results],
             {"TRAINREPRO_FSDP2_PYTHON": no_torch}, 3, "has no torch"),
            (["run", config_error, "--engine", "fsdp2"], {}, 0,
             "skipped: --engine fsdp2: no FSDP2 counterpart: the verdict is on the DeepSpeed "
             "config itself"),
        ]
        for arguments, environment, code, text in cases:
            done = subprocess.run([trainrepro, *arguments], capture_output=True, text=True,
                                  cwd=root, env=dict(os.environ, **environment))
            output = done.stdout + done.stderr
            what = " ".join(arguments) + "".join(f" with {k}={v}" for k, v in environment.items())
            if done.returncode != code:
                failures.append(f"{what}: exit {done.returncode}, expected {code}:\n{output}")
            elif text not in output:
                failures.append(f"{what}: the output does not say {text!r}:\n{output}")
            elif code == 3 and os.path.exists(results):
                failures.append(f"{what}: refused, but wrote {results}")
            else:
                print(f"ok: {what}: exit {code}, {text!r}")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
