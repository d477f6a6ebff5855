#!/usr/bin/env python3
"""fp16 loss-scale calibration as a user meets it: `trainrepro new` on a config with dynamic
loss scaling from 2^32 (hysteresis 2, ZeRO stage 1) says how many windows DeepSpeed will skip
while the scale comes down and sets golden.steps to them plus --steps; `run` then passes and
says what calibration cost. The same scenario cut to fewer steps than calibration takes is not
judged (exit 2) and names the number of steps to run; with that number it passes.

    new_fp16_calibration_test.py TRAINREPRO
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

CONFIG = pathlib.Path("tests/data/ds_configs/fp16_initial_scale_power_32_zero1.json")


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    return done.returncode, done.stdout + done.stderr


def main():
    trainrepro = sys.argv[1]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        scenario, golden = tmp / "fp16.json", tmp / "golden"
        code, said = run([trainrepro, "new", "--ds-config", str(CONFIG), "-o", str(scenario),
                          "--golden-dir", str(golden), "--steps", "3"])
        predicted = re.search(r"about (\d+) windows? will be skipped before the first update", said)
        if code != 0 or not predicted:
            problems.append(f"new exited {code} without predicting calibration:\n{said}")
            return report(problems)
        skips = int(predicted.group(1))
        written = json.loads(scenario.read_text())
        if written["golden"]["steps"] != skips + 3:
            problems.append(f"golden.steps {written['golden']['steps']}, not {skips} + 3")
        code, ran = run([trainrepro, "run", str(scenario), "--golden-dir", str(golden)])
        wanted = f"fp16 calibration: {skips} windows skipped, 3 updates compared"
        if code != 0 or wanted not in ran:
            problems.append(f"run exited {code}, wanted '{wanted}' on its line:\n{ran}")

        # Too short for calibration: not judged, and the message's step count works.
        written["golden"]["steps"] = max(1, skips - 1)
        scenario.write_text(json.dumps(written, indent=2))
        run([trainrepro, "golden", "--update", str(scenario), "--golden-dir", str(golden)])
        code, ran = run([trainrepro, "run", str(scenario), "--golden-dir", str(golden)])
        at_least = re.search(r"to at least (\d+)", ran)
        if code != 2 or "not judged" not in ran or not at_least:
            problems.append(f"a run shorter than calibration: exit {code}, wanted 2 and "
                            f"'not judged … to at least N':\n{ran}")
        else:
            written["golden"]["steps"] = int(at_least.group(1))
            scenario.write_text(json.dumps(written, indent=2))
            run([trainrepro, "golden", "--update", str(scenario), "--golden-dir", str(golden)])
            code, ran = run([trainrepro, "run", str(scenario), "--golden-dir", str(golden)])
            if code != 0:
                problems.append(f"with the steps the message named, run exited {code}:\n{ran}")
    return report(problems)


def report(problems):
    for problem in problems:
        print(problem)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
