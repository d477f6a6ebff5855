"""`trainrepro watch` leaves no process of the watched command behind, and never holds its
output in memory (issue 50 items 2 and 4, issue 51):
  - `--timeout` of `python -m torch.distributed.run --nproc_per_node 2` whose ranks catch SIGTERM
    and go on (torchrun starts each rank in a session of its own): torchrun and both ranks gone;
  - SIGTERM to trainrepro while those ranks run: the same, and trainrepro ends by SIGTERM;
  - a script that leaves two background `sleep`s (one setsid, one double-forked) and exits: gone;
  - trainrepro killed with SIGKILL (it can stop nothing itself): the watched Pythons end on
    their own (sitecustomize), torchrun by its parent-death signal;
  - 200 MB of output: passed through to trainrepro's stdout, and trainrepro's peak resident
    memory grows by far less than that over a run that prints one line;
  - output appears while the command runs, not when it ends;
  - a rank that dies by SIGKILL (as by the kernel's OOM killer) is named, with the signal.
Before the fix: the ranks and the sleeps survived, adopted by init; the output was read whole.

Usage: check_watch_processes.py TRAINREPRO TORCH_PYTHON [WORD…: only the cases named so]
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

# torchrun (torch.distributed.elastic) leaves a torchelastic_* folder in $TMPDIR after every
# launch: the launches here get a $TMPDIR of this script's own, removed when it ends.
SCRATCH = tempfile.TemporaryDirectory(prefix="trainrepro-torchrun-")
os.environ["TMPDIR"] = SCRATCH.name

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "scripts", "ranks-outlive-sigterm.py")
ENVIRONMENT = dict(os.environ, OMP_NUM_THREADS="1")


def torchrun(python, ranks=2):
    return [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks)]


def recorded_pids(folder):
    return [int(name[:-4]) for name in os.listdir(folder) if name.endswith(".pid")]


def alive(pid):
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def survivors(folder, case):
    """The recorded processes still alive (killed here, so that one failure stays one)."""
    left = []
    for pid in recorded_pids(folder):
        if alive(pid):
            try:
                command = open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
                parent = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
            except OSError:
                command, parent = "?", "?"
            left.append(f"{case}: pid {pid} (parent {parent}) still running: {command[:120]}")
            os.kill(pid, signal.SIGKILL)
    return left


def wait_for_pids(folder, count, process):
    """Waits until `count` pids are recorded or the watch ends; False if it ended first."""
    while len(recorded_pids(folder)) < count:
        if process.poll() is not None:
            return False
        time.sleep(0.2)
    time.sleep(1)  # the ranks are in their loop, SIGTERM handler installed
    return True


def timeout_case(trainrepro, python):
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([trainrepro, "watch", "--timeout", "40", "--", *torchrun(python),
                               SCRIPT, folder], capture_output=True, text=True, cwd=folder,
                              env=ENVIRONMENT)
        output = done.stdout + done.stderr
        problems = []
        if len(recorded_pids(folder)) < 3:  # torchrun + 2 ranks
            problems.append(f"timeout: the ranks did not start within --timeout 40:\n{output}")
        if done.returncode != 3 or "did not finish within 40 s" not in output:
            problems.append(f"timeout: exit {done.returncode}, not the timeout error:\n{output}")
        return problems + survivors(folder, "timeout")


def stop_signal_case(trainrepro, python, stop_signal):
    name = stop_signal.name
    with tempfile.TemporaryDirectory() as folder:
        watch = subprocess.Popen([trainrepro, "watch", "--timeout", "600", "--",
                                  *torchrun(python), SCRIPT, folder], cwd=folder,
                                 env=ENVIRONMENT, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
        started = wait_for_pids(folder, 3, watch)
        if started:
            watch.send_signal(stop_signal)
        output = watch.communicate()[0].decode(errors="replace")
        if not started:
            return [f"{name}: the watch ended before the ranks started:\n{output}"] + \
                survivors(folder, name)
        problems = []
        if watch.returncode != -stop_signal:
            problems.append(f"{name}: trainrepro ended with {watch.returncode}, not by the "
                            f"signal:\n{output}")
        if stop_signal == signal.SIGKILL:
            # Nothing stops them but themselves: sitecustomize polls each second, then SIGTERM,
            # and SIGKILL 10 s later for these ranks (they catch SIGTERM).
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and any(alive(p) for p in recorded_pids(folder)):
                time.sleep(0.5)
        return problems + survivors(folder, name)


def background_case(trainrepro, python):
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([trainrepro, "watch", "--", python, SCRIPT, folder,
                               "--background-sleep"], capture_output=True, text=True, cwd=folder,
                              env=ENVIRONMENT)
        problems = []
        if len(recorded_pids(folder)) != 2:
            problems.append(f"background: {len(recorded_pids(folder))} sleeps recorded, not 2:\n"
                            f"{done.stdout}{done.stderr}")
        if "started two background sleeps" not in done.stdout:
            problems.append(f"background: the script's output is not in trainrepro's:\n"
                            f"{done.stdout}{done.stderr}")
        return problems + survivors(folder, "background")


def killed_rank_case(trainrepro, python):
    """torchrun reaps its ranks, so only what the ranks' launcher saw can say which one a signal
    killed: the verdict names rank 1 and SIGKILL (before: only torchrun's exit code 1)."""
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([trainrepro, "watch", "--timeout", "300", "--", *torchrun(python),
                               SCRIPT, folder, "--killed-rank", "1"], capture_output=True,
                              text=True, cwd=folder, env=ENVIRONMENT)
        output = done.stdout + done.stderr
        problems = []
        if done.returncode != 3 or not re.search(r"rank 1 \(pid [0-9]+\) was killed by SIGKILL",
                                                 output):
            problems.append(f"killed rank: exit {done.returncode}, rank 1's SIGKILL not said:\n"
                            f"{output[-3000:]}")
        return problems + survivors(folder, "killed rank")


def peak_resident_kib(command, folder, stdout):
    """Runs `command`; returns (exit status, its peak resident set in KiB: ru_maxrss)."""
    process = subprocess.Popen(command, cwd=folder, env=ENVIRONMENT, stdout=stdout,
                               stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss


def large_output_case(trainrepro, python):
    megabytes = 200
    printer = ("import sys\nline = b'x' * 1023 + b'\\n'\nwrite = sys.stdout.buffer.write\n"
               f"for _ in range({megabytes} * 1024): write(line)\nprint('end of the output')\n")
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "small.txt"), "wb") as small:
            _, baseline = peak_resident_kib([trainrepro, "watch", "--", python, "-c",
                                             "print('one line')"], folder, small)
        passed = os.path.join(folder, "passed.txt")
        with open(passed, "wb") as out:
            code, peak = peak_resident_kib([trainrepro, "watch", "--", python, "-c", printer],
                                           folder, out)
        size = os.path.getsize(passed)
        with open(passed, "rb") as out:
            out.seek(max(0, size - 20000))
            end = out.read()
        os.remove(passed)
    growth_mib = (peak - baseline) / 1024
    print(f"     {megabytes} MB of output: trainrepro's peak RSS {peak / 1024:.0f} MiB, "
          f"{growth_mib:+.0f} MiB over a one-line run; {size / 2**20:.0f} MiB passed through")
    problems = []
    if code != 3 or b"end of the output" not in end or size < megabytes * 2**20:
        problems.append(f"large output: exit {code}, {size} bytes passed through, its end: "
                        f"{end[-300:]!r}")
    if growth_mib > megabytes / 4:
        problems.append(f"large output: trainrepro's peak RSS grew by {growth_mib:.0f} MiB for "
                        f"{megabytes} MB of output (one line: {baseline / 1024:.0f} MiB): the "
                        "output is held in memory")
    return problems


def live_output_case(trainrepro, python):
    """The command prints a line, then waits for a file this test creates only once the line has
    come out of trainrepro: before the fix nothing came out until the command ended."""
    with tempfile.TemporaryDirectory() as folder:
        go = os.path.join(folder, "go")
        # (The lines are printed in two words: trainrepro's own report repeats the command.)
        waiter = (f"import os, time\nprint('waiting for', 'go', flush=True)\n"
                  f"for _ in range(600):\n"
                  f"    if os.path.exists({go!r}): print('go', 'seen'); break\n"
                  f"    time.sleep(0.1)\nelse:\n    print('gave up', 'waiting')\n")
        watch = subprocess.Popen([trainrepro, "watch", "--", python, "-c", waiter], cwd=folder,
                                 env=ENVIRONMENT, stdout=subprocess.PIPE, text=True)
        seen = []
        for line in watch.stdout:
            seen.append(line)
            if "waiting for go" in line:
                open(go, "w").close()
        watch.wait()
        text = "".join(seen)
        if "go seen" not in text:
            return [f"live output: the command's line came out only when it ended:\n{text}"]
        return []


def main():
    trainrepro, python = os.path.abspath(sys.argv[1]), sys.argv[2]
    only = sys.argv[3:]
    cases = [
        ("--timeout of torchrun, ranks catch SIGTERM", lambda: timeout_case(trainrepro, python)),
        ("SIGTERM to trainrepro", lambda: stop_signal_case(trainrepro, python, signal.SIGTERM)),
        ("a script's background sleeps", lambda: background_case(trainrepro, python)),
        ("SIGKILL to trainrepro", lambda: stop_signal_case(trainrepro, python, signal.SIGKILL)),
        ("a rank killed by a signal is named", lambda: killed_rank_case(trainrepro, python)),
        ("200 MB of output", lambda: large_output_case(trainrepro, python)),
        ("output while the command runs", lambda: live_output_case(trainrepro, python)),
    ]
    failures = []
    for name, case in cases:
        if only and not any(word in name for word in only):
            continue
        problems = case()
        print(f"{'ok  ' if not problems else 'FAIL'} {name}", flush=True)
        failures += problems
    for failure in failures:
        print("\n" + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
