#!/usr/bin/env python3
"""Activation checkpointing must lower the training's peak tensor memory: runs the GPT scenarios
of scenarios/checkpointing/ (the same model and batch without checkpointing, with reentrant and
with non-reentrant checkpoints of every block) and compares the peaks their results report.
Prints the table quoted in the closing note. Usage: peak_memory.py TRAINREPRO"""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODES = ["none", "reentrant", "non-reentrant"]


def main():
    trainrepro = sys.argv[1]
    with tempfile.TemporaryDirectory() as results:
        files = [str(ROOT / "scenarios/checkpointing" / f"gpt-checkpoint-{m}.json") for m in MODES]
        run = subprocess.run([trainrepro, "run", *files, "--results", results],
                             cwd=ROOT, capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            sys.exit(f"peak_memory: trainrepro run exited {run.returncode}")
        peaks = {}
        for mode in MODES:
            result = json.loads((pathlib.Path(results) / f"gpt-checkpoint-{mode}.json").read_text())
            peaks[mode] = result["memory"]["peak_tensor_bytes"]
    baseline = peaks["none"]
    failures = []
    print(f"{'checkpointing':<16}{'peak tensor bytes':>20}{'vs none':>10}")
    for mode in MODES:
        print(f"{mode:<16}{peaks[mode]:>20}{peaks[mode] / baseline:>10.3f}")
        if mode != "none" and not peaks[mode] < baseline:
            failures.append(f"{mode}: peak {peaks[mode]} is not below {baseline} without")
    if peaks["reentrant"] != peaks["non-reentrant"]:
        failures.append("reentrant and non-reentrant keep the same tensors here (every block's "
                        f"input requires grad), yet peak {peaks['reentrant']} != "
                        f"{peaks['non-reentrant']}")
    if failures:
        sys.exit("peak_memory: " + "; ".join(failures))


if __name__ == "__main__":
    main()
