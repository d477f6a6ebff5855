"""`perf run --engine deepspeed==VERSION`: the real DeepSpeed measured beside trainrepro's engine
in one run. Checks the twin benchmark is measured, named in the Google Benchmark JSON with the
benchmark it twins, and the reference / deepspeed step-time ratio printed. Asserts no time.

Usage: check_perf_engine_ratio.py TRAINREPRO SCENARIO VERSION
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile


def main():
    trainrepro, scenario, version = sys.argv[1:4]
    name = json.loads(pathlib.Path(scenario).read_text())["name"]
    twin = f"{name} [deepspeed {version}]"
    failures = []
    with tempfile.TemporaryDirectory(prefix="trainrepro-perf-engine-") as folder:
        out = pathlib.Path(folder) / "run.json"
        command = [trainrepro, "perf", "run", scenario, "--engine", f"deepspeed=={version}",
                   "--repetitions", "3", "--out", str(out)]
        print("$ " + " ".join(command), flush=True)
        done = subprocess.run(command, capture_output=True, text=True)
        print(done.stdout)
        print(done.stderr, file=sys.stderr)
        if done.returncode != 0:
            print(f"FAIL: perf run exited {done.returncode}, expected 0")
            return 1
        ratio = re.search(rf"^{re.escape(name)}: reference / deepspeed step-time ratio: "
                          r"([0-9.]+) \(([0-9.]+) in calibration units\)$", done.stdout, re.M)
        if not ratio:
            failures.append(f"no line '{name}: reference / deepspeed step-time ratio: R' printed")
        elif not float(ratio.group(1)) > 0 or not float(ratio.group(2)) > 0:
            failures.append(f"the ratio is not a positive number: {ratio.group(0)}")
        if not re.search(rf"^{re.escape(twin)}\s+[0-9.]+ ms/step", done.stdout, re.M):
            failures.append(f"no console line for the twin {twin!r}")
        entries = [entry for entry in json.loads(out.read_text())["benchmarks"]
                   if entry.get("run_type") == "iteration" and entry["run_name"] == twin]
        if len(entries) != 3:
            failures.append(f"{out}: {len(entries)} repetitions of {twin!r}, expected 3")
        for entry in entries:
            if entry.get("loop") != "deepspeed" or entry.get("twin_of") != name:
                failures.append(f"{out}: {twin!r} has loop {entry.get('loop')!r} and twin_of "
                                f"{entry.get('twin_of')!r}, expected 'deepspeed' and {name!r}")
                break
    for failure in failures:
        print("FAIL: " + failure)
    if not failures:
        print(f"OK: {twin} measured beside {name}; {ratio.group(0)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
