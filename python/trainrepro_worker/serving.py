"""A set of rank processes that serves job after job (issue 53): Python, `import deepspeed` and the
process group are paid once per set instead of once per scenario. Driven by `trainrepro run
--serve-workers` (harness/worker/worker_set.cpp; docs/engines.md, "Ranks that serve job after
job").

Usage: deepspeed_engine_worker.py --serve FOLDER WORLD_SIZE [ENGINE]
  Started once, without TRAINREPRO_WORKER_RANKS_STARTED: the set's coordinator. It writes
  FOLDER/port (the /dev/shm buffers to remove are named after it), starts WORLD_SIZE rank
  processes (this same command with RANK set), and answers the jobs. ENGINE is deepspeed (the
  default: the ranks import DeepSpeed and start the process group through it) or fsdp2 (torch
  alone: FSDP2's Python need not have DeepSpeed); a set serves jobs of its engine only.

The channel is files in FOLDER, each renamed into place once whole (the trace's own rule):
  FOLDER/job-<N>.json     the parent's request, N = 1, 2, …: a job as the one-shot mode reads it;
                          its "trace" prefix lies in that job's own private folder
  FOLDER/stop             the parent's request to end the set (or it kills the process group)
  FOLDER/rank<R>-<N>.json rank R's acknowledgement of job N (the coordinator reads it)
  FOLDER/answer-<N>.json  the coordinator's answer: {"job": N, "status": "answered" (PREFIX.json
                          is written, as the one-shot mode writes it) | "no_trace" | "ranks_died",
                          "retired": whether the set ended after this job, "exit_codes", "left"}
Files, not the ranks' stdin/stdout or a line on a pipe: what the scenario's code, DeepSpeed and
torch print goes to stdout and stderr and can never be read as an answer; a request or answer is
whole or absent, never half a line; a C++ parent needs only rename and a poll of a path (no
blocking FIFO open, no descriptors to hand through fork), and either side may die without the
other blocking. Polling every 10 ms costs nothing beside a job of seconds.

A set retires (its ranks exit after acknowledging, the coordinator after answering) when a job
ended in anything but "trained" on some rank, or left something behind (job_isolation.check):
an exception may leave another rank inside a collective, paired with nothing, and only ending
the processes releases it; the parent starts a new set for the next job. A rank that dies
without acknowledging ends the set the same way ("ranks_died", the others killed). A rank that
hangs is the parent's to kill, at its own timeout: nothing inside the set can tell a hang from a
long job.
"""
import json
import os
import signal
import subprocess
import sys
import time

import deepspeed_engine_worker as one_shot

POLL_SECONDS = 0.01


def read_json(path):
    with open(path) as source:
        return json.load(source)


def wait_for_request(folder, n, alive=lambda: True):
    """The path of job N's request, or None when the set is asked to stop (or alive() fails)."""
    path = os.path.join(folder, f"job-{n}.json")
    stop = os.path.join(folder, "stop")
    while True:
        if os.path.exists(path):
            return path
        if os.path.exists(stop) or not alive():
            return None
        time.sleep(POLL_SECONDS)


def end_on_sigterm(signum, frame):
    # Once: the same stop often comes twice (passed on, then the parent-death signal), and a
    # second SystemExit inside `finally` would cut the cleanup short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(128 + signum)


def serve_ranks(folder, world_size, engine="deepspeed"):
    """The coordinator: starts the ranks, and answers each job once every rank acknowledged it
    (or one died). Exit status 0 when the set ended as asked or retired, 3 when a rank died."""
    # trainrepro passes a stop signal on as SIGTERM (and PR_SET_PDEATHSIG sends it when
    # trainrepro dies): ending through `finally` kills the ranks and removes the buffers, which
    # trainrepro, already ending, cannot.
    signal.signal(signal.SIGTERM, end_on_sigterm)
    port = one_shot.free_port()
    one_shot.write_json_atomically(os.path.join(folder, "port.json"), {"port": port})
    with open(os.path.join(folder, "port"), "w") as out:
        out.write(str(port))
    command = [sys.executable, os.path.abspath(one_shot.__file__), "--serve", folder,
               str(world_size), engine]
    ranks = [subprocess.Popen(command, env=one_shot.rank_environment(r, world_size, port))
             for r in range(world_size)]
    try:
        return answer_jobs(folder, world_size, ranks)
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
            rank.wait()
        one_shot.remove_shared_memory_buffers(port)


def answer_jobs(folder, world_size, ranks):
    n = 1
    while True:
        request = wait_for_request(folder, n, alive=lambda: all(r.poll() is None for r in ranks))
        if request is None:
            return 0 if all(r.poll() in (None, 0) for r in ranks) else 3
        prefix = read_json(request)["trace"]
        acks = [os.path.join(folder, f"rank{r}-{n}.json") for r in range(world_size)]
        while not all(os.path.exists(a) for a in acks):
            dead = [r for r, (rank, ack) in enumerate(zip(ranks, acks))
                    if rank.poll() is not None and not os.path.exists(ack)]
            if dead:
                for rank in ranks:  # the others wait in a collective that will never complete
                    if rank.poll() is None:
                        rank.send_signal(signal.SIGKILL)
                codes = [rank.wait() for rank in ranks]
                one_shot.write_json_atomically(
                    os.path.join(folder, f"answer-{n}.json"),
                    {"job": n, "status": "ranks_died", "retired": True, "exit_codes": codes,
                     "dead_ranks": dead})
                return 3
            time.sleep(POLL_SECONDS)
        answers = [read_json(a) for a in acks]
        retired = any(a["retire"] for a in answers)
        codes = [rank.wait() for rank in ranks] if retired else [None] * world_size
        published = one_shot.publish_rank_traces(prefix, world_size, codes)
        one_shot.write_json_atomically(
            os.path.join(folder, f"answer-{n}.json"),
            {"job": n, "status": "answered" if published == 0 else "no_trace",
             "retired": retired, "exit_codes": codes, "left": [a["left"] for a in answers]})
        if retired:
            return 0
        n += 1


def serve_jobs(folder, rank, world_size, engine="deepspeed"):
    """One rank: the imports and the process group once, then job after job, each isolated
    (job_isolation.py), until asked to stop or a job retires the set."""
    import torch
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float32)
    if engine == "fsdp2":
        # Its imports paid here, once, like deepspeed's below, and imported before JobIsolation
        # takes what they hold at the start (their caches).
        import fsdp2_worker
        import torch.distributed.fsdp  # noqa: F401
        import torch.distributed.tensor  # noqa: F401
        torch.distributed.init_process_group("gloo")
        fsdp2_worker.device_mesh(world_size)  # the set's, like its process group
    else:
        import deepspeed
        deepspeed.init_distributed(dist_backend="gloo")
    import job_isolation
    isolation = job_isolation.JobIsolation()
    n, retire = 1, False
    # A coordinator killed outright (SIGKILL) leaves its ranks to init: they would wait for the
    # next job forever.
    coordinator = os.getppid()
    while True:
        request = wait_for_request(folder, n, alive=lambda: os.getppid() == coordinator)
        if request is None:
            break
        isolation.before_job()
        status = one_shot.train_rank(read_json(request), rank, world_size, isolation.engines,
                                     isolation.make_memory_probe)
        isolation.reset()
        left = isolation.check()
        retire = status != "trained" or any(left.values())
        one_shot.write_json_atomically(os.path.join(folder, f"rank{rank}-{n}.json"),
                                       {"status": status, "left": left, "retire": retire})
        if retire:
            break
        n += 1
    # A retiring rank may leave a peer inside a collective: its exit, not a destroy that waits
    # on the peer, is what frees it.
    if not retire:
        torch.distributed.destroy_process_group()
    return 0
