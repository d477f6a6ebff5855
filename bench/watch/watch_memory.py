"""What `trainrepro watch` costs in memory and time on a user's script at its own size (issue 51
item 2): the same command run unwatched and then under `trainrepro watch`, alternating, each run
sampled every 0.1 s through /proc. Reported per run: the peak resident memory of the whole
process tree (the sum of the RSS of the launched process and all its descendants, so trainrepro,
torchrun and every rank; pages shared between processes count once per process, as `ps` would
add them), the peak of the single largest process, the wall time, and the median time of the
judged steps (1..K, K the watch's --steps, default 4) from the script's `step N seconds S` lines,
and their mean (the watch computes its golden inside step K, which the median hides); then each
of them watched over unwatched. These machines are shared and noisy: run pairs and
read the ratios, not one number.

Usage: python3 bench/watch/watch_memory.py TRAINREPRO [--python PYTHON] [--ranks 1] [--pairs 1]
           [--watch "--memory-steps 0"] [--unwatched-only] [--limit-gb 18]
           [--label NAME] [--json FILE] -- SCRIPT [SCRIPT ARGS...]
e.g.  python3 bench/watch/watch_memory.py build/trainrepro --watch "--memory-steps 0" --
          tests/watch/scripts/gpt-causal-mask.py --size 27m --zero 1 --gas 4 --micro-batch 2
          --steps 6 --print-step-times
The script runs as `PYTHON -m torch.distributed.run --standalone --nproc_per_node RANKS SCRIPT
...`; it must print `step N seconds S` on rank 0 at each optimizer step's end for the step
times (tests/watch/scripts/gpt-causal-mask.py --print-step-times does; its --size 27m, 124m and
350m are the issue's models). PYTHON: TRAINREPRO_DEEPSPEED_PYTHON, else
tests/deepspeed_oracle/deepspeed_python when DeepSpeed 0.19.8 is in trainrepro's cache, as
tests/watch/check_watch_scripts.py chooses. Runs with OMP_NUM_THREADS=1 and DS_ACCELERATOR=cpu.
A run whose tree passes --limit-gb is killed (its row says so). Prints a markdown table (a row
per run, then the medians and ratios, then issue 51's targets: each rank's peak watched at most
1.5x unwatched, the judged steps at most 2x, met or not); --json FILE writes every run. Not a
test: it asserts nothing, it prints numbers for a person.

Before the recording's rewrite (commit 2253070, 2026-12-06, 2 shared cores with builds running:
load 2-3, so times are noisy), gpt-causal-mask.py --zero 1 --gas 4 --micro-batch 2 --steps 6,
1 rank, watch --memory-steps 0: 27m unwatched 2.13-2.18 GB tree (1.62-1.67 GB the rank), step
2.05 s; watched with --steps 4 killed at the 18 GB limit inside step 4 (the rank 17.2 GB), with
--steps 2 11.67 GB (5.4x; step 2 took 19.6 s), --steps 1 6.76 GB (3.2x; step 1 10.1 s): ~4.7 GB
more per judged window. 124m (162 M parameters) unwatched 5.88 GB tree (5.37 GB the rank), step
~17.5 s; 350m (405 M) unwatched 13.23 GB tree (12.72 GB the rank), step ~40.9 s.
"""
import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# torchrun (torch.distributed.elastic) leaves a torchelastic_* folder in $TMPDIR after every
# launch: the launches here get a $TMPDIR of this script's own, removed when it ends.
SCRATCH = tempfile.TemporaryDirectory(prefix="trainrepro-torchrun-")
os.environ["TMPDIR"] = SCRATCH.name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PAGE = os.sysconf("SC_PAGE_SIZE")
STEP_LINE = re.compile(r"\bstep (\d+) seconds ([0-9.eE+-]+)")


def deepspeed_python():
    """check_watch_scripts.py's choice (compare_engines.py's)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "engine_deepspeed"))
    from compare_engines import deepspeed_python as chosen
    return chosen()


def process_name(pid):
    """Which of the tree it is, in two words: its program and its script, module or
    subcommand (`python gpt-causal-mask.py`, `python torch.distributed.run`, `trainrepro
    watch`)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read().decode(errors="replace").split("\0")
    except OSError:
        return "?"
    rest = [word for word in words[1:] if word and word not in ("-m", "-u")]
    return " ".join(os.path.basename(word) for word in words[:1] + rest[:1])


def process_tree_rss(root):
    """(sum of RSS bytes over root and its descendants, RSS bytes of the largest of them, its
    pid)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                # The command name may hold spaces and parentheses: fields follow the last ')'.
                parent = int(stat.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # ended while we looked
        children.setdefault(parent, []).append(int(name))
    total, largest, largest_pid, pending = 0, 0, root, [root]
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm") as statm:
                rss = int(statm.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
        total += rss
        if rss > largest:
            largest, largest_pid = rss, pid
    return total, largest, largest_pid


def measure(command, limit_bytes, folder):
    """Runs command in its own session, sampling its tree every 0.1 s: a dict of what was
    measured. The tree is killed (SIGKILL to its process group) when it passes limit_bytes."""
    env = dict(os.environ, OMP_NUM_THREADS="1", DS_ACCELERATOR="cpu")
    with open(os.path.join(folder, "output.txt"), "w+") as output:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, cwd=folder,
                                   env=env, start_new_session=True)
        peak_tree, peak_largest, largest_name, killed = 0, 0, "", False
        while process.poll() is None:
            tree, largest, largest_pid = process_tree_rss(process.pid)
            peak_tree = max(peak_tree, tree)
            if largest > peak_largest:
                peak_largest, largest_name = largest, process_name(largest_pid)
            if tree > limit_bytes and not killed:
                os.killpg(process.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.1)
        wall = time.monotonic() - started
        output.seek(0)
        text = output.read()
    steps = {}
    for found in STEP_LINE.finditer(text):
        steps.setdefault(int(found.group(1)), float(found.group(2)))
    return {"command": command, "exit_code": process.returncode, "killed_at_limit": killed,
            "peak_tree_bytes": peak_tree, "peak_largest_process_bytes": peak_largest,
            "largest_process": largest_name,
            "wall_seconds": wall, "step_seconds": {str(k): v for k, v in sorted(steps.items())},
            "output_tail": text[-3000:]}


def judged_steps(watch_options):
    """K of the watch's --steps K (its default 4)."""
    for index, option in enumerate(watch_options):
        if option == "--steps" and index + 1 < len(watch_options):
            return int(watch_options[index + 1])
        if option.startswith("--steps="):
            return int(option.split("=", 1)[1])
    return 4


def judged_step_times(run, judged, summary):
    """summary (median or mean) of the run's step times 1..judged; the mean counts the K-th
    step, where the watch computes its golden, as the median does not."""
    times = [run["step_seconds"][str(step)] for step in range(1, judged + 1)
             if str(step) in run["step_seconds"]]
    return summary(times) if times else None


def cell(value, unit=1.0, digits=2):
    return "—" if value is None else f"{value / unit:.{digits}f}"


def ratio(watched, unwatched):
    return None if watched is None or not unwatched else watched / unwatched


def main():
    parser = argparse.ArgumentParser(usage=__doc__.split("Usage: ")[1].split("\ne.g.")[0])
    parser.add_argument("trainrepro")
    parser.add_argument("--python")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--watch", default="--memory-steps 0",
                        help="trainrepro watch's options, one string")
    parser.add_argument("--unwatched-only", action="store_true")
    parser.add_argument("--limit-gb", type=float, default=18.0)
    parser.add_argument("--label")
    parser.add_argument("--json")
    arguments = sys.argv[1:]
    if "--" not in arguments or arguments.index("--") == len(arguments) - 1:
        parser.error("the script to run and its arguments come after --")
    options = parser.parse_args(arguments[:arguments.index("--")])
    script = arguments[arguments.index("--") + 1:]
    python = options.python or deepspeed_python()
    launch = [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
              str(options.ranks), os.path.abspath(script[0]), *script[1:]]
    watch_options = shlex.split(options.watch)
    watched_command = [os.path.abspath(options.trainrepro), "watch", *watch_options,
                       "--results", "watch.json", "--", *launch]
    judged = judged_steps(watch_options)
    label = options.label or f"{' '.join(script[1:])}, {options.ranks} rank(s)"
    limit = int(options.limit_gb * 1e9)
    runs = []
    print(f"| {label} | run | peak tree GB | largest process GB | wall s | median step "
          f"1..{judged} s | mean step 1..{judged} s | exit |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for pair in range(options.pairs):
        kinds = [("unwatched", launch)]
        if not options.unwatched_only:
            kinds.append(("watched", watched_command))
        for kind, command in kinds:
            with tempfile.TemporaryDirectory() as folder:
                run = measure(command, limit, folder)
                results = os.path.join(folder, "watch.json")
                if os.path.exists(results):
                    with open(results) as verdict:
                        run["verdict"] = json.load(verdict)
            run.update(kind=kind, pair=pair + 1,
                       median_judged_step_seconds=judged_step_times(run, judged,
                                                                    statistics.median),
                       mean_judged_step_seconds=judged_step_times(run, judged, statistics.mean))
            runs.append(run)
            exit_said = "killed at limit" if run["killed_at_limit"] else str(run["exit_code"])
            print(f"| pair {pair + 1} | {kind} | {cell(run['peak_tree_bytes'], 1e9)} | "
                  f"{cell(run['peak_largest_process_bytes'], 1e9)} "
                  f"({run['largest_process']}) | {cell(run['wall_seconds'], digits=1)} | "
                  f"{cell(run['median_judged_step_seconds'], digits=3)} | "
                  f"{cell(run['mean_judged_step_seconds'], digits=3)} | {exit_said} |",
                  flush=True)
            if run["exit_code"] != 0 and not run["killed_at_limit"]:
                print(run["output_tail"][-1500:], file=sys.stderr)

    def median_of(kind, key):
        values = [run[key] for run in runs if run["kind"] == kind and run[key] is not None]
        return statistics.median(values) if values else None

    keys = ("peak_tree_bytes", "peak_largest_process_bytes", "wall_seconds",
            "median_judged_step_seconds", "mean_judged_step_seconds")
    summary = {kind: {key: median_of(kind, key) for key in keys}
               for kind in ("unwatched", "watched")}
    summary["watched / unwatched"] = {key: ratio(summary["watched"][key],
                                                 summary["unwatched"][key]) for key in keys}
    for kind in ("unwatched", "watched", "watched / unwatched"):
        values, gigabytes = summary[kind], 1 if kind == "watched / unwatched" else 1e9
        print(f"| median | {kind} | {cell(values['peak_tree_bytes'], gigabytes)} | "
              f"{cell(values['peak_largest_process_bytes'], gigabytes)} | "
              f"{cell(values['wall_seconds'], digits=2 if gigabytes == 1 else 1)} | "
              f"{cell(values['median_judged_step_seconds'], digits=3)} | "
              f"{cell(values['mean_judged_step_seconds'], digits=3)} | |")
    # Issue 51's targets, as ratios of this run's own baseline: each rank's peak watched at most
    # 1.5x unwatched (one extra copy of its gradients at most), the judged steps at most 2x.
    ratios = summary["watched / unwatched"]
    for name, value, at_most in (
            ("largest process's peak, watched / unwatched", ratios["peak_largest_process_bytes"],
             1.5),
            ("judged step (mean), watched / unwatched", ratios["mean_judged_step_seconds"], 2.0)):
        verdict = "not measured" if value is None else \
            ("met" if value <= at_most else "NOT met") + f" ({value:.2f})"
        print(f"target: {name} at most {at_most}: {verdict}")
    if options.json:
        document = {"label": label, "judged_steps": judged, "watch_options": watch_options,
                    "ranks": options.ranks, "runs": runs, "summary": summary}
        partial = options.json + ".partial"
        with open(partial, "w") as out:
            json.dump(document, out, indent=1)
        os.replace(partial, options.json)


if __name__ == "__main__":
    main()
