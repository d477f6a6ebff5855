#!/usr/bin/env python3
"""A CPU leak's memory snapshots open with PyTorch's own memory-viewer tools, like a CUDA one.

Runs a leaking CPU scenario with --results, then loads each `<name>.memory-snapshot-step<N>.pickle`
written beside its results with pickle and torch.cuda._memory_viz (segsum, trace, segment_plot,
trace_plot), and checks that the later snapshot holds more allocations born after warm-up than
the earlier one: the leak shows in the viewer.

usage: check_cpu_snapshot.py TRAINREPRO WORKDIR SCENARIO  (run with a Python that has torch)
"""
import json
import pathlib
import pickle
import re
import shutil
import subprocess
import sys

import torch.cuda._memory_viz as memory_viz


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    trainrepro, workdir, scenario = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    shutil.rmtree(workdir, ignore_errors=True)
    run = subprocess.run([trainrepro, "run", scenario, "--results", str(workdir)],
                         capture_output=True, text=True)
    print(run.stdout[-1500:], run.stderr[-1500:])
    results = [p for p in workdir.glob("*.json")]
    if len(results) != 1:
        fail(f"expected one results file, found {results}")
    result = json.loads(results[0].read_text())
    if not result["memory"] or not result["memory"]["diagnoses"]:
        fail("the scenario found no leak; pick a leaking one")
    snapshots = sorted(workdir.glob("*.memory-snapshot-step*.pickle"),
                       key=lambda p: int(re.search(r"step(\d+)", p.name).group(1)))
    if len(snapshots) != 2:
        fail(f"expected two snapshots (halfway and at the end), found {snapshots}")
    born_late = []
    for path in snapshots:
        with open(path, "rb") as f:
            data = pickle.load(f)
        for key in ("segments", "device_traces"):
            if key not in data:
                fail(f"{path.name}: no {key}")
        summary = memory_viz.segsum(data)
        memory_viz.trace(data)
        page = memory_viz.segment_plot(data) + memory_viz.trace_plot(data)
        if "<html" not in page.lower():
            fail(f"{path.name}: the viewer's page was not produced")
        steps = [int(re.search(r"step (\d+)", b["frames"][0]["name"]).group(1))
                 for s in data["segments"] for b in s["blocks"]]
        warmup = result["memory"]["warmup_steps"]
        born_late.append(sum(1 for step in steps if step > warmup))
        print(f"{path.name}: {len(data['segments'])} live allocations, "
              f"{born_late[-1]} born after warm-up; segsum: {summary.splitlines()[1].strip()}")
    if not born_late[1] > born_late[0] > 0:
        fail(f"allocations born after warm-up {born_late}: the leak does not grow in the snapshots")
    print("OK: PyTorch's memory viewer tools read the CPU snapshots; the leak grows "
          f"{born_late[0]} -> {born_late[1]} allocations")


if __name__ == "__main__":
    main()
