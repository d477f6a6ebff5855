#!/usr/bin/env python3
"""Stopping trainrepro while its ranks run leaves nothing behind: SIGTERM (as `timeout` sends
it) or SIGINT (Ctrl-C) to the parent while a rank hangs must kill mpirun and every rank, remove
the temporary files, and end the parent by that signal. Before, mpirun and both ranks kept
running (one at ~45% CPU) with their files in /tmp.

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
    with tempfile.TemporaryDirectory() as own_tmp, tempfile.TemporaryDirectory() as home, \
            tempfile.TemporaryDirectory() as mpi_tmp:
        # A private copy: its path marks this test's processes; TMPDIR shows what is left behind.
        copy = os.path.join(home, f"stop-{stop_signal.name}.json")
        shutil.copy(scenario, copy)
        # Open MPI's own session folder goes elsewhere: TMPDIR holds only what trainrepro makes.
        environment = dict(os.environ, TMPDIR=own_tmp, TRAINREPRO_FAULT_HANG_RANK="1:1",
                           OMPI_MCA_orte_tmpdir_base=mpi_tmp)
        parent = subprocess.Popen([trainrepro, "run", copy, "--rank-timeout", "300",
                                   "--golden-dir", os.path.join(os.getcwd(), "golden")],
                                  env=environment, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline and len(rank_processes(copy)) < 3:  # mpirun + 2 ranks
            time.sleep(0.2)
        started = rank_processes(copy)
        time.sleep(2)  # the ranks train a step; rank 1 hangs
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
        files = os.listdir(own_tmp)
        if files:
            problems.append(f"{stop_signal.name}: left in TMPDIR: {files}")
        return problems


def main():
    trainrepro, scenario = sys.argv[1], sys.argv[2]
    problems = []
    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        problems += stop_once(trainrepro, scenario, stop_signal)
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print("ok: SIGTERM and SIGINT each killed mpirun and both ranks and left no files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
