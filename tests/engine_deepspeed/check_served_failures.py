"""A served worker that dies or hangs costs its scenario alone (`run`'s worker sets, issue 53).

Usage: check_served_failures.py TRAINREPRO
Runs five 1-rank memory scenarios in one `trainrepro run --engine deepspeed==0.19.8
--rank-timeout 45` (served: the default). While the 2nd scenario trains, this script kills the set's
rank (SIGKILL); while the 4th trains on the set that replaced it, it stops that set's rank
(SIGSTOP: a hang). Required: the 2nd scenario an infrastructure error naming the dead rank, the
4th one naming the timeout, the 1st, 3rd and 5th their one-shot outcome (passed or reproduced),
three sets started, and nothing left: no worker process, no private folder, no /dev/shm buffer
of the run. Exit 0 when all hold, 1 otherwise, 77 (CTest SKIP) without DeepSpeed 0.19.8 in
trainrepro's cache.
"""
import glob
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

from check_served_verdicts import DEFAULT_ENGINE as ENGINE, SKIP, release_installed

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCENARIOS = ["mlp-keep-nothing", "mlp-keep-loss-item", "mlp-eval-under-no-grad",
             "mlp-keep-loss-with-graph", "mlp-keep-outputs-with-graph"]
EXPECTED = {"mlp-keep-nothing": "passed", "mlp-eval-under-no-grad": "passed",
            "mlp-keep-outputs-with-graph": "reproduced"}


def processes():
    """pid -> (parent pid, command line) of every process."""
    found = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            pid = int(stat.split("/")[2])
            text = pathlib.Path(stat).read_text()
            parent = int(text[text.rindex(")") + 2:].split()[1])
            command = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            found[pid] = (parent, command.decode(errors="replace"))
        except (OSError, ValueError):
            continue
    return found


def serve_folders(trainrepro_pid):
    temp = os.environ.get("TMPDIR", "/tmp")
    return sorted(glob.glob(f"{temp}/trainrepro-ranks-{trainrepro_pid}-*/serve"))


def rank_of(serve_folder):
    """The rank process of the set serving from `serve_folder`: the `--serve` process whose
    parent is one too (the coordinator)."""
    every = processes()
    serving = {pid for pid, (_, command) in every.items() if f"--serve {serve_folder} " in command}
    ranks = [pid for pid in serving if every[pid][0] in serving]
    return ranks[0] if ranks else None


def act_on_second_job(trainrepro, done_folders, action, deadline):
    """Waits until a set of the run not in `done_folders` is handed its second job, then sends
    `action` to its rank at once (the job takes a second or more: it is mid-job). Returns
    (its serve folder, the rank's pid, the set's port), or None when the run ended first."""
    while time.time() < deadline and trainrepro.poll() is None:
        for folder in serve_folders(trainrepro.pid):
            if folder in done_folders or not os.path.exists(f"{folder}/job-2.json"):
                continue
            rank = rank_of(folder)
            if rank is not None:
                os.kill(rank, action)
                port = pathlib.Path(f"{folder}/port").read_text().strip()
                return folder, rank, port
        time.sleep(0.01)
    return None


def main():
    if not release_installed():
        print("SKIP: DeepSpeed 0.19.8 is not in trainrepro's cache")
        return SKIP
    failures = []

    def expect(condition, what):
        print(("ok   " if condition else "FAIL ") + what)
        if not condition:
            failures.append(what)

    paths = [str(ROOT / "scenarios" / "memory" / f"{name}.json") for name in SCENARIOS]
    with tempfile.TemporaryDirectory(prefix="trainrepro-served-failures-") as results:
        trainrepro = subprocess.Popen(
            [sys.argv[1], "run", *paths, "--engine", ENGINE, "--rank-timeout", "45",
             "--results", results],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 600
        killed = act_on_second_job(trainrepro, [], signal.SIGKILL, deadline)
        print(f"SIGKILL to (serve folder, rank, port) {killed}")
        stopped = act_on_second_job(trainrepro, [killed[0]] if killed else [], signal.SIGSTOP,
                                    deadline)
        print(f"SIGSTOP to (serve folder, rank, port) {stopped}")
        output, _ = trainrepro.communicate(timeout=600)
        print(output[-2500:])
        found = {}
        for path in pathlib.Path(results).glob("*.json"):
            result = json.loads(path.read_text())
            found[result["scenario"]["name"]] = result
        pid = trainrepro.pid
    expect(killed is not None and stopped is not None, "a rank was killed and another stopped")
    expect(len(found) == 5, f"five results ({len(found)})")
    second = found.get(SCENARIOS[1], {})
    expect(second.get("outcome") == "error" and second.get("error_source") == "infrastructure"
           and "died" in second.get("found", ""),
           f"the killed rank's scenario is an infrastructure error naming the dead rank: "
           f"{second.get('outcome')}, {second.get('found', '')[:300]!r}")
    fourth = found.get(SCENARIOS[3], {})
    expect(fourth.get("outcome") == "error" and fourth.get("error_source") == "infrastructure"
           and "--rank-timeout" in fourth.get("found", ""),
           f"the hung rank's scenario is an infrastructure error naming the timeout: "
           f"{fourth.get('outcome')}, {fourth.get('found', '')[:300]!r}")
    for name, outcome in EXPECTED.items():
        expect(found.get(name, {}).get("outcome") == outcome,
               f"{name}: {outcome} ({found.get(name, {}).get('outcome')})")
    expect(trainrepro.returncode == 3, f"exit 3, an infrastructure error ({trainrepro.returncode})")
    left = [p for p, (_, command) in processes().items()
            if f"trainrepro-ranks-{pid}-" in command]
    expect(not left, f"no worker process left ({left})")
    expect(not serve_folders(pid), "no private folder left")
    ports = [done[2] for done in (killed, stopped) if done]
    buffers = [b for port in ports
               for b in glob.glob(f"/dev/shm/deepspeed_allreduce_buffer_*_127.0.0.1_{port}_*")]
    expect(not buffers, f"no /dev/shm buffer of the killed sets left ({buffers})")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
