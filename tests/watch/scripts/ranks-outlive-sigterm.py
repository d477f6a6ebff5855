"""A training job whose processes outlive a polite stop, for check_watch_processes.py (no
DeepSpeed: it trains nothing). Every process writes its pid into PIDS_FOLDER/<pid>.pid once it
is set up; the test checks each is gone when `trainrepro watch` has returned.

  ranks-outlive-sigterm.py PIDS_FOLDER
      each rank (under torchrun: in a session of its own) also records torchrun's pid, catches
      SIGTERM as a rank that saves a checkpoint first would, and goes on "training" (sleeping).
  ranks-outlive-sigterm.py PIDS_FOLDER --killed-rank R
      rank R kills itself with SIGKILL (as the kernel's out-of-memory killer would), the others
      keep the default SIGTERM (torchrun then stops them).
  ranks-outlive-sigterm.py PIDS_FOLDER --background-sleep
      starts two `sleep 300` that outlive it, one in a session of its own, one double-forked by
      a shell, and exits at once.
"""
import os
import signal
import subprocess
import sys
import time

folder = sys.argv[1]


def record(pid):
    # Both ranks record torchrun's pid: each writes its own partial file (one shared name made
    # the second rank's rename fail now and then, and the job end before the test could stop it).
    path = os.path.join(folder, f"{pid}.pid")
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "w") as out:
        out.write(f"{pid}\n")
    os.replace(partial, path)


if "--background-sleep" in sys.argv:
    record(subprocess.Popen(["sleep", "300"], start_new_session=True).pid)
    doubled = os.path.join(folder, "doubled")
    subprocess.run(["sh", "-c", f"sleep 300 & echo $! > {doubled}"], check=True)
    record(int(open(doubled).read()))
    print("started two background sleeps; exiting", flush=True)
    sys.exit(0)

rank = os.environ.get("RANK", "0")


def save_checkpoint_first(signal_number, frame):
    print(f"rank {rank}: SIGTERM caught: saving a checkpoint, then going on", flush=True)


if "--killed-rank" not in sys.argv:
    signal.signal(signal.SIGTERM, save_checkpoint_first)
record(os.getppid())  # torchrun's agent
record(os.getpid())
print(f"rank {rank}: training", flush=True)
if "--killed-rank" in sys.argv and sys.argv[sys.argv.index("--killed-rank") + 1] == rank:
    time.sleep(1)
    os.kill(os.getpid(), signal.SIGKILL)
while True:
    time.sleep(0.5)
