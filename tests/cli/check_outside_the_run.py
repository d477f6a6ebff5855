#!/usr/bin/env python3
"""A shared scenario whose DeepSpeed config would make the real DeepSpeed act outside the run
(import a module, write where the config or its default says, log online; docs/trust.md, "Running someone
else's scenario: what it trusts") is refused by every path that hands the config to DeepSpeed:
exit 2, "<file>:/deepspeed/<pointer>: DeepSpeed …", and nothing created where it points.

    check_outside_the_run.py TRAINREPRO                  # run/perf --engine deepspeed (a stand-in
                                                         # Python: refused before any worker),
                                                         # bisect, export; the reference engine
                                                         # still runs each scenario (exit 0)
    check_outside_the_run.py TRAINREPRO --release 0.19.8 # run --engine deepspeed==0.19.8, the
                                                         # real release from trainrepro's cache

Each command runs in a fresh folder holding only outside_target_module.py (on PYTHONPATH for
the user's own Python: an import of it writes a file; a release from the cache sets its own
PYTHONPATH, where DeepSpeed's import of it fails instead); the scenarios point at paths inside
that folder or leave DeepSpeed's default (the current folder). After each command the folder
must hold that file alone. With the rule switched off, every --release check fails (exit 0 or 1,
and the flops report, CSV folders, ./DeepSpeedJobName and NVMe swap folders appear).
"""
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DATA = ROOT / "tests" / "data" / "outside_the_run"
PERF_DATA = ROOT / "tests" / "data" / "outside_the_run_perf"
FAKE_PYTHON = ROOT / "tests" / "engine_deepspeed" / "fake_deepspeed_python.py"
PLANTED = "outside_target_module.py"
PLANTED_TEXT = "open('imported-by-deepspeed', 'w').write('the module ran')\nclass Thing:\n    pass\n"

# Each hostile scenario and the key its refusal names.
POINTERS = {
    "autocast-imports-a-module": "/torch_autocast/lower_precision_safe_modules",
    "flops-profiler-overwrites-a-file": "/flops_profiler/output_file",
    "autotuning-writes-metrics": "/autotuning/enabled",
    "tensorboard-writes-a-folder": "/tensorboard/enabled",
    "tensorboard-writes-the-current-folder": "/tensorboard/enabled",
    "csv-monitor-writes-a-folder": "/csv_monitor/enabled",
    "csv-monitor-writes-the-current-folder": "/csv_monitor/enabled",
    "wandb-logs-online": "/wandb/enabled",
    "comet-logs-online": "/comet/enabled",
    "nvme-optimizer-swap-files": "/zero_optimization/offload_optimizer/nvme_path",
    "nvme-parameter-swap-files": "/zero_optimization/offload_param/nvme_path",
}


def run_in_fresh_folder(command, env_extra=None, timeout=1200):
    """(exit code, output, what the folder holds besides the planted module)."""
    with tempfile.TemporaryDirectory(prefix="trainrepro-outside-") as folder:
        pathlib.Path(folder, PLANTED).write_text(PLANTED_TEXT)
        env = dict(os.environ, PYTHONPATH=folder, OMP_NUM_THREADS="1", **(env_extra or {}))
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                              timeout=timeout)
        left = sorted(set(os.listdir(folder)) - {PLANTED})
        return done.returncode, done.stdout + done.stderr, left


def main():
    trainrepro = os.path.abspath(sys.argv[1])
    release = sys.argv[sys.argv.index("--release") + 1] if "--release" in sys.argv else None
    golden = str(ROOT / "golden")
    failures = []
    checked = 0

    def expect(label, command, code, phrase, env_extra=None):
        nonlocal checked
        checked += 1
        got, output, left = run_in_fresh_folder(command, env_extra)
        if got != code:
            failures.append(f"{label}: exit {got}, expected {code}; output:\n{output[-2000:]}")
        elif phrase and phrase not in output:
            failures.append(f"{label}: the output lacks {phrase!r}:\n{output[-2000:]}")
        if left:
            failures.append(f"{label}: DeepSpeed acted outside the run: the folder now holds "
                            f"{left}")
        print(f"{'ok  ' if got == code and not left else 'FAIL'} {label} (exit {got})")

    fake = {"TRAINREPRO_DEEPSPEED_PYTHON": str(FAKE_PYTHON)}
    for name, pointer in POINTERS.items():
        file = str(DATA / f"{name}.json")
        refused = f"{file}:/deepspeed{pointer}: DeepSpeed"
        if release:
            expect(f"{name}: run --engine deepspeed=={release}",
                   [trainrepro, "run", file, "--engine", f"deepspeed=={release}", "--golden-dir",
                    golden], 2, refused)
            continue
        expect(f"{name}: run --engine deepspeed",
               [trainrepro, "run", file, "--engine", "deepspeed", "--golden-dir", golden], 2,
               refused, fake)
        expect(f"{name}: bisect",
               [trainrepro, "bisect", file, "--engine", "deepspeed", "--good", "0.19.7", "--bad",
                "0.19.8", "--golden-dir", golden], 2, "bisect: " + refused)
        expect(f"{name}: export --python",
               [trainrepro, "export", file, "--python", "-o", "repro.py"], 2, refused)
        # The reference engine never acts on these settings: it runs the scenario as written.
        expect(f"{name}: run (reference engine)",
               [trainrepro, "run", file, "--golden-dir", golden], 0, "1 passed")
    if not release:
        file = str(PERF_DATA / "flops-profiler-twin.json")
        expect("perf twin: perf run --engine deepspeed",
               [trainrepro, "perf", "run", file, "--engine", "deepspeed", "-o", "perf.json"], 2,
               f"{file}:/deepspeed/flops_profiler/output_file: DeepSpeed", fake)

    for failure in failures:
        print("FAILED " + failure)
    print(f"{checked} commands checked, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
