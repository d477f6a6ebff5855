"""`perf run --engine ENGINE…`: other engines (the real DeepSpeed, PyTorch's FSDP2) measured beside
trainrepro's engine in one run. Checks each engine's twin benchmark is measured, named in the
Google Benchmark JSON with the benchmark it twins and the engine as its loop, and the step-time
ratios printed: the reference over each twin, and with two engines the second's twin over the
first's. Asserts no time.

Usage: check_perf_engine_ratio.py TRAINREPRO SCENARIO ENGINE [ENGINE]
ENGINE: deepspeed==VERSION or fsdp2.
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

RATIO = r"step-time ratio {} / {}: ([0-9.]+) \(([0-9.]+) in calibration units\)$"


def twin_pattern(name, engine):
    """The twin's name as a regex: "NAME [deepspeed 0.19.8]", "NAME [fsdp2 torch 2.11.0]"."""
    if engine.startswith("deepspeed=="):
        return re.escape(f"{name} [deepspeed {engine.split('==')[1]}]")
    return re.escape(f"{name} [fsdp2 torch ") + r"[^\]]+\]"


def main():
    trainrepro, scenario, *engines = sys.argv[1:]
    name = json.loads(pathlib.Path(scenario).read_text())["name"]
    failures, found = [], []
    with tempfile.TemporaryDirectory(prefix="trainrepro-perf-engine-") as folder:
        out = pathlib.Path(folder) / "run.json"
        command = [trainrepro, "perf", "run", scenario, "--repetitions", "3", "--out", str(out)]
        for engine in engines:
            command += ["--engine", engine]
        print("$ " + " ".join(command), flush=True)
        done = subprocess.run(command, capture_output=True, text=True)
        print(done.stdout)
        print(done.stderr, file=sys.stderr)
        if done.returncode != 0:
            print(f"FAIL: perf run exited {done.returncode}, expected 0")
            return 1
        runs = [entry for entry in json.loads(out.read_text())["benchmarks"]
                if entry.get("run_type") == "iteration"]
        twins = []
        for engine in engines:
            pattern = twin_pattern(name, engine)
            names = sorted({e["run_name"] for e in runs if re.fullmatch(pattern, e["run_name"])})
            if len(names) != 1:
                failures.append(f"{out}: twins matching {pattern!r}: {names}, expected one")
                continue
            twin = names[0]
            twins.append(twin)
            loop = engine.split("==")[0]
            entries = [e for e in runs if e["run_name"] == twin]
            if len(entries) != 3:
                failures.append(f"{out}: {len(entries)} repetitions of {twin!r}, expected 3")
            if any(e.get("loop") != loop or e.get("twin_of") != name for e in entries):
                failures.append(f"{out}: {twin!r} lacks loop {loop!r} and twin_of {name!r}")
            if not re.search(rf"^{re.escape(twin)}\s+[0-9.]+ ms/step", done.stdout, re.M):
                failures.append(f"no console line for the twin {twin!r}")
        pairs = [(name, twin) for twin in twins]
        if len(twins) == 2:
            pairs.append((twins[1], twins[0]))
        for numerator, denominator in pairs:
            ratio = re.search("^" + RATIO.format(re.escape(numerator), re.escape(denominator)),
                              done.stdout, re.M)
            if not ratio:
                failures.append(f"no line 'step-time ratio {numerator} / {denominator}: R'")
            elif not float(ratio.group(1)) > 0 or not float(ratio.group(2)) > 0:
                failures.append(f"the ratio is not a positive number: {ratio.group(0)}")
            else:
                found.append(ratio.group(0))
    for failure in failures:
        print("FAIL: " + failure)
    if not failures:
        print("OK: " + "; ".join(found))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
