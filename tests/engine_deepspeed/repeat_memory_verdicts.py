"""The memory verdicts of the real engine, run after run: no flips.

Usage: repeat_memory_verdicts.py TRAINREPRO RUNS [--engine deepspeed==VERSION [--serve-workers]]
                                 SCENARIO...
Runs the scenarios RUNS times (`trainrepro run … --results` into a temporary folder each time)
and compares every run's outcome and diagnosis kinds with the first run's. Prints one line per
scenario (its outcome, its diagnoses, the runs that agreed) and exits 0 when no scenario flipped,
1 when one did, 3 when a run left no results. A leak verdict that depends on the run (the host
heap's noise, the census's timing) shows here, never in a single run.
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile


def verdicts(trainrepro, paths, extra):
    with tempfile.TemporaryDirectory(prefix="trainrepro-repeat-") as folder:
        subprocess.run([trainrepro, "run", *paths, "--results", folder, *extra],
                       capture_output=True, text=True, timeout=3600)
        found = {}
        for path in sorted(pathlib.Path(folder).glob("*.json")):
            result = json.loads(path.read_text())
            found[result["scenario"]["name"]] = (
                result["outcome"],
                tuple(sorted(set(re.findall(r"diagnosis ([a-z_]+)", result.get("found", ""))))))
        return found


def main():
    trainrepro, runs, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    extra = []
    if paths[:1] == ["--engine"]:
        extra, paths = paths[:2], paths[2:]
    if paths[:1] == ["--serve-workers"]:  # each run's scenarios on kept ranks
        extra, paths = extra + paths[:1], paths[1:]
    first = verdicts(trainrepro, paths, extra)
    if not first:
        print("no results from the first run")
        return 3
    agreeing = {name: 1 for name in first}
    flips = []
    for run in range(2, runs + 1):
        later = verdicts(trainrepro, paths, extra)
        for name, verdict in first.items():
            if later.get(name) == verdict:
                agreeing[name] += 1
            else:
                flips.append(f"run {run}: {name}: {later.get(name)} after {verdict}")
    for name, (outcome, diagnoses) in sorted(first.items()):
        print(f"{name}: {outcome} ({', '.join(diagnoses) or 'no diagnosis'}), "
              f"{agreeing[name]}/{runs} runs the same")
    for flip in flips:
        print("FLIP " + flip)
    print(f"{len(first)} scenarios x {runs} runs, {len(flips)} flips")
    return 1 if flips else 0


if __name__ == "__main__":
    sys.exit(main())
