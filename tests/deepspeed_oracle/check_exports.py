#!/usr/bin/env python3
"""`trainrepro export --python` against the real DeepSpeed: every exportable scenario given is
exported, and its script run with DeepSpeed on the CPU (python for one rank, torchrun for more)
must show what trainrepro expects: a bug scenario's script exits 1 with REPRODUCED, a fixed
twin's exits 0 with AGREES. Scenarios the script cannot reproduce (export exit 2, with why) are
listed, not failed.

Usage: check_exports.py TRAINREPRO SCENARIO...  (in the oracle's environment: deepspeed_env.sh)
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

# torchrun (torch.distributed.elastic) leaves a torchelastic_* folder in $TMPDIR after every
# launch: the launches here get a $TMPDIR of this script's own, removed when it ends.
SCRATCH = tempfile.TemporaryDirectory(prefix="trainrepro-torchrun-")
os.environ["TMPDIR"] = SCRATCH.name


def main():
    trainrepro, files = sys.argv[1], sys.argv[2:]
    failures, skipped, checked = [], [], 0
    with tempfile.TemporaryDirectory() as temporary:
        for file in files:
            scenario = json.loads(pathlib.Path(file).read_text())
            if scenario.get("deepspeed_version", "0.19.8") != "0.19.8":
                skipped.append(f"{file}: follows DeepSpeed {scenario['deepspeed_version']}; "
                               "the oracle installs 0.19.8")
                continue
            script = pathlib.Path(temporary) / (pathlib.Path(file).stem + ".py")
            done = subprocess.run([trainrepro, "export", file, "--python", "-o", str(script)],
                                  capture_output=True, text=True)
            if done.returncode == 2:
                skipped.append(f"{file}: {done.stderr.strip()}")
                continue
            if done.returncode != 0:
                failures.append(f"{file}: export exited {done.returncode}: {done.stderr}")
                continue
            world = scenario.get("world_size", 1)
            command = [sys.executable, str(script)] if world == 1 else [
                str(pathlib.Path(sys.executable).parent / "torchrun"), "--nproc_per_node",
                str(world), "--master_port", "29531", str(script)]
            run = subprocess.run(command, capture_output=True, text=True, timeout=900,
                                 env={**os.environ, "DS_ACCELERATOR": "cpu"})
            bug = scenario["expect"]["outcome"] != "pass"
            wanted = (1, "REPRODUCED") if bug else (0, "AGREES")
            checked += 1
            ok = run.returncode == wanted[0] and wanted[1] in run.stdout
            last = [line for line in run.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
            print(("ok    " if ok else "FAIL  ") + f"{file}: exit {run.returncode}: {last[0]}")
            if not ok:
                failures.append(f"{file}: expected exit {wanted[0]} and {wanted[1]}\n"
                                f"{run.stdout[-2000:]}{run.stderr[-3000:]}")
    for line in skipped:
        print(f"not exported: {line}")
    for failure in failures:
        print("FAILED " + failure)
    print(f"{checked} exported script(s) run, {len(failures)} failure(s), {len(skipped)} not "
          "exportable")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
