#!/usr/bin/env python3
"""Stopping trainrepro while its ranks run leaves nothing behind: SIGTERM (as `timeout` sends
it) or SIGINT (Ctrl-C) to the parent while a rank hangs must kill mpirun and every rank, remove
the temporary files, and end the parent by that signal. Before, mpirun and both ranks kept
running (one at ~45% CPU) with their files in /tmp.

Ranks killed by --rank-timeout, or by a stop signal, never remove Open MPI's shared-memory
segments (two 4 MB files in /dev/shm per killed run, until a reboot) nor its session folder:
both must live in the run's own folder in TMPDIR, which trainrepro removes, and a folder left by
a trainrepro that was itself killed (SIGKILL) is removed by the next run.

usage: stop_signal_test.py TRAINREPRO SCENARIO"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def rank_processes(marker):
    """pids of processes whose command line names `marker` (the scenario's private copy)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            found.append((int(pid), command.strip()))
    return found


def stop_once(trainrepro, scenario, stop_signal):
    with tempfile.TemporaryDirectory() as own_tmp, tempfile.TemporaryDirectory() as home:
        # A private copy: its path marks this test's processes; TMPDIR shows what is left behind.
        copy = os.path.join(home, f"stop-{stop_signal.name}.json")
        shutil.copy(scenario, copy)
        environment = dict(os.environ, TMPDIR=own_tmp, TRAINREPRO_FAULT_HANG_RANK="1:1")
        environment.pop("OMPI_MCA_orte_tmpdir_base", None)
        environment.pop("OMPI_MCA_btl_vader_backing_directory", None)
        parent = subprocess.Popen([trainrepro, "run", copy, "--rank-timeout", "300",
                                   "--golden-dir", os.path.join(os.getcwd(), "golden")],
                                  env=environment, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline and len(rank_processes(copy)) < 3:  # mpirun + 2 ranks
            time.sleep(0.2)
        started = rank_processes(copy)
        time.sleep(2)  # the ranks train a step; rank 1 hangs
        segments = shared_memory_segments(own_tmp)
        parent.send_signal(stop_signal)
        try:
            parent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            parent.kill()
            return [f"{stop_signal.name}: the parent did not end within 30 s"]
        time.sleep(1)
        problems = []
        if len(started) < 3:
            problems.append(f"{stop_signal.name}: only {len(started)} processes started: {started}")
        if parent.returncode != -stop_signal:
            problems.append(f"{stop_signal.name}: the parent ended with {parent.returncode}, not "
                            f"by the signal ({-stop_signal})")
        left = rank_processes(copy)
        if left:
            problems.append(f"{stop_signal.name}: still running: {left}")
            for pid, _ in left:
                os.kill(pid, signal.SIGKILL)
        if len(segments) < 2:
            problems.append(f"{stop_signal.name}: the ranks' shared-memory segments are not in "
                            f"the run's folder in TMPDIR (found {segments}; /dev/shm?)")
        files = os.listdir(own_tmp)
        if files:
            problems.append(f"{stop_signal.name}: left in TMPDIR: {files}")
        return problems


def shared_memory_segments(folder):
    """Open MPI's vader segment files anywhere under `folder`."""
    return [name for _, _, names in os.walk(folder) for name in names
            if name.startswith("vader_segment")]


def hung_rank_timeout(trainrepro, scenario):
    """--rank-timeout kills the whole group with SIGKILL: nothing of the run may stay."""
    with tempfile.TemporaryDirectory() as own_tmp:
        environment = dict(os.environ, TMPDIR=own_tmp, TRAINREPRO_FAULT_HANG_RANK="1:1")
        environment.pop("OMPI_MCA_orte_tmpdir_base", None)
        environment.pop("OMPI_MCA_btl_vader_backing_directory", None)
        run = subprocess.run([trainrepro, "run", scenario, "--rank-timeout", "5",
                              "--golden-dir", os.path.join(os.getcwd(), "golden")],
                             env=environment, capture_output=True, text=True, timeout=120)
        problems = []
        if run.returncode != 3 or "did not finish within 5 s" not in run.stdout + run.stderr:
            problems.append(f"rank timeout: exit {run.returncode}, not the timeout error:\n"
                            f"{run.stdout}{run.stderr}")
        files = [os.path.relpath(os.path.join(root, name), own_tmp)
                 for root, _, names in os.walk(own_tmp) for name in names]
        if files:
            problems.append(f"rank timeout: left in TMPDIR: {files}")
        return problems


def stale_folders_removed(trainrepro, scenario):
    """A run removes the folders of trainrepro processes that are gone, and no other."""
    with tempfile.TemporaryDirectory() as own_tmp:
        dead = os.path.join(own_tmp, "trainrepro-ranks-4194999-AbCdEf")  # above Linux's pid_max
        alive = os.path.join(own_tmp, f"trainrepro-ranks-{os.getpid()}-AbCdEf")
        other = os.path.join(own_tmp, "trainrepro-ranks-notapid")
        for folder in (dead, alive, other):
            os.makedirs(folder)
            with open(os.path.join(folder, "vader_segment.host.1.0"), "wb") as handle:
                handle.write(b"\0" * 4096)
        environment = dict(os.environ, TMPDIR=own_tmp)
        run = subprocess.run([trainrepro, "run", scenario,
                              "--golden-dir", os.path.join(os.getcwd(), "golden")],
                             env=environment, capture_output=True, text=True, timeout=120)
        problems = []
        if run.returncode != 0:
            problems.append(f"stale folders: the run failed ({run.returncode}):\n{run.stdout}")
        if os.path.exists(dead):
            problems.append("stale folders: the folder of a process that is gone was kept")
        for kept in (alive, other):
            if not os.path.exists(kept):
                problems.append(f"stale folders: {os.path.basename(kept)} was removed")
        return problems


def main():
    trainrepro, scenario = sys.argv[1], sys.argv[2]
    problems = []
    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        problems += stop_once(trainrepro, scenario, stop_signal)
    problems += hung_rank_timeout(trainrepro, scenario)
    problems += stale_folders_removed(trainrepro, scenario)
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print("ok: SIGTERM and SIGINT each killed mpirun and both ranks; neither they nor the "
              "rank timeout left a file (shared-memory segments included); a dead run's folder "
              "was removed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
