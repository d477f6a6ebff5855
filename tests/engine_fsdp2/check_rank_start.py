"""How a serving set starts its ranks (python/trainrepro_worker/serving.py, start_rank_processes),
on FSDP2's sets, which need torch alone:
- forked: the coordinator imports what a rank imports and forks its ranks; two 2-rank jobs train
  on them, and the ranks are the coordinator's children;
- fresh Pythons: with a second thread running in the coordinator (forking would copy one thread
  and leave the other's locks held), it says why and starts each rank as a new Python instead;
  the same two jobs train;
- killed: a coordinator killed by SIGKILL takes its forked ranks with it (PR_SET_PDEATHSIG).
Needs no DeepSpeed: scripts/test runs it.

Usage: PYTHON check_rank_start.py   (PYTHON: one with torch; it runs the coordinators)
Exit 0 all ok, 1 a check failed.
"""
import json
import os
import pathlib
import signal
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "engine_deepspeed"))
import serving_client as client  # noqa: E402
from checklist import Checklist  # noqa: E402

JOB = "fsdp2-matrix-stage0-ws2-gas1-sgd"  # as trainrepro wrote it for --engine fsdp2
FALLBACK_SAID = "each rank starts its own Python"
# Runs the worker file as __main__ after starting a thread that outlives the imports.
WITH_A_THREAD = ["-c", "import runpy, sys, threading, time; "
                       "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start(); "
                       "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"]


def serve_two_jobs(check, folder, prefix, what):
    """Two FSDP2 jobs on one 2-rank set; returns the set's output."""
    served = client.ServingSet(sys.executable, 2, folder, engine="fsdp2", prefix=prefix)
    job = client.load_job(JOB)
    try:
        for _ in range(2):
            n, trace = served.submit(job)
            answer = served.answer(n, timeout=300)
            status = json.load(open(trace + ".json"))["status"] \
                if os.path.exists(trace + ".json") else None
            check.expect(answer.get("status") == "answered" and status == "trained"
                         and not answer.get("retired"),
                         f"{what}: job {n} trained and the set kept (answer {answer}, trace "
                         f"{status})")
            if n == 1:
                ranks = served.rank_pids()
                check.expect(len(ranks) == 2, f"{what}: 2 ranks, the coordinator's children "
                             f"(found {ranks})")
    finally:
        served.stop()
    return (pathlib.Path(folder) / "serve-output.txt").read_text()


def killed_coordinator_takes_its_ranks(check, folder):
    served = client.ServingSet(sys.executable, 2, folder, engine="fsdp2")
    deadline = time.time() + 120
    ranks = []
    while len(ranks) < 2 and time.time() < deadline and served.process.poll() is None:
        time.sleep(0.1)
        ranks = served.rank_pids()
    try:
        os.kill(served.process.pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended by itself: the check below says so
        pass
    served.process.wait()
    deadline = time.time() + 30
    while any(os.path.exists(f"/proc/{pid}") for pid in ranks) and time.time() < deadline:
        time.sleep(0.1)
    left = [pid for pid in ranks if os.path.exists(f"/proc/{pid}")]
    check.expect(len(ranks) == 2 and not left, f"a coordinator killed by SIGKILL: its 2 forked "
                 f"ranks {ranks} end with it (left: {left})")
    served.kill()  # the process group, should anything be left
    served.output.close()


def main():
    # As trainrepro starts an FSDP2 Python (deepspeed_worker.cpp, find_fsdp2_python): unset,
    # `import torch` starts an OpenMP thread and the coordinator cannot fork.
    os.environ["OMP_NUM_THREADS"] = "1"
    check = Checklist("check_rank_start.py")
    with tempfile.TemporaryDirectory(prefix="trainrepro-rank-start-") as folder:
        output = serve_two_jobs(check, f"{folder}/forked", (), "forked ranks")
        check.expect(FALLBACK_SAID not in output, "forked ranks: no fallback said")
        output = serve_two_jobs(check, f"{folder}/fresh", WITH_A_THREAD,
                                "a thread in the coordinator")
        check.expect(FALLBACK_SAID in output and "2 threads run in the coordinator" in output,
                     "a thread in the coordinator: it says why each rank starts its own Python")
        killed_coordinator_takes_its_ranks(check, f"{folder}/killed")
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
