"""A set of rank processes that serves job after job (issue 53): Python, `import deepspeed` and the
process group are paid once per set instead of once per scenario. Driven by `trainrepro run
--serve-workers` (harness/worker/worker_set.cpp; docs/engines.md, "Ranks that serve job after
job").

Usage: deepspeed_engine_worker.py --serve FOLDER WORLD_SIZE [ENGINE]
  Started once, without TRAINREPRO_WORKER_RANKS_STARTED: the set's coordinator. It writes
  FOLDER/port (the /dev/shm buffers to remove are named after it), imports what a rank imports
  and forks WORLD_SIZE rank processes from itself (start_rank_processes), and answers the jobs.
  With TRAINREPRO_WORKER_RANKS_STARTED=1 and RANK set, this command is one rank (where forking
  is unsafe, the coordinator starts its ranks so). ENGINE is deepspeed (the
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
import traceback

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
    ranks = start_rank_processes(folder, world_size, engine, port)
    try:
        return answer_jobs(folder, world_size, ranks)
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
            rank.wait()
        one_shot.remove_shared_memory_buffers(port)


# What torch imports on first use, inside a rank's first job, measured there on 2 cores with 4
# ranks: torch._dynamo by torch.optim.Optimizer.__init__ (torch._disable_dynamo; every job's
# optimizer, DeepSpeed's FusedAdam included), 2.5 s; torch._inductor.compile_fx by the first
# torch.compile decorator (DeepSpeed 0.19.8 imports its Muon optimizer, compiled, for any ZeRO
# stage above 0), 2.1 s.
IMPORTED_ON_FIRST_USE = ("torch._dynamo", "torch._inductor.compile_fx")


def import_what_ranks_import(engine):
    """The modules every rank of ENGINE imports before its first job (serve_jobs, train_rank),
    imported here once so that the ranks forked from this process start with them."""
    import importlib
    import torch  # noqa: F401
    for name in IMPORTED_ON_FIRST_USE:
        try:
            importlib.import_module(name)
        except ImportError:  # another torch: its job imports what it needs, as before
            pass
    import job_isolation  # noqa: F401
    import memory_census  # noqa: F401
    import zoo  # noqa: F401
    from safetensors.torch import load_file, save_file  # noqa: F401
    if engine == "fsdp2":
        import fsdp2_worker  # noqa: F401
        import torch.distributed.fsdp  # noqa: F401
        import torch.distributed.tensor  # noqa: F401
    else:
        import deepspeed  # noqa: F401
        import ds_worker  # noqa: F401


def why_fork_is_unsafe():
    """Why this process cannot be forked into ranks, or None. A fork copies one thread: a
    second one (an import that started a thread pool) would leave its locks held in the child,
    and CUDA, once initialised, does not work in a forked child."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        return f"{threads} threads run in the coordinator after the imports"
    torch = sys.modules["torch"]
    if torch.cuda.is_initialized():
        return "CUDA was initialised by the imports"
    return None


def start_rank_processes(folder, world_size, engine, port):
    """The set's ranks, forked from this process once it has imported what they import: the
    imports are paid once per set rather than once per rank (on 2 cores the first job of a
    four-rank set went from 18.2 s to 12.7 s, and scenarios/zero/ from 162.0 s to 151.5 s:
    docs/engines.md). Each rank then starts its own process group, as a rank started anew does.
    Where forking is unsafe (why_fork_is_unsafe), each rank is a new Python started with this
    same command."""
    import_what_ranks_import(engine)
    unsafe = why_fork_is_unsafe()
    if unsafe is not None:
        print(f"trainrepro worker set: each rank starts its own Python: {unsafe}",
              file=sys.stderr)
        command = [sys.executable, os.path.abspath(one_shot.__file__), "--serve", folder,
                   str(world_size), engine]
        return [subprocess.Popen(command, env=one_shot.rank_environment(r, world_size, port))
                for r in range(world_size)]
    return [ForkedRank(folder, r, world_size, engine, port) for r in range(world_size)]


class ForkedRank:
    """One rank forked from the coordinator, with the part of subprocess.Popen's interface the
    coordinator uses (poll, wait, send_signal, kill; returncode negative for a signal)."""

    def __init__(self, folder, rank, world_size, engine, port):
        sys.stdout.flush()  # else what is buffered would be written twice
        sys.stderr.flush()
        self.returncode = None
        coordinator = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:
            self._serve(folder, rank, world_size, engine, port, coordinator)  # never returns

    @staticmethod
    def _serve(folder, rank, world_size, engine, port, coordinator):
        code = 3
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the coordinator's handler is not ours
            die_with(coordinator)
            os.environ.update(one_shot.rank_environment(rank, world_size, port))
            code = serve_jobs(folder, rank, world_size, engine)
        except SystemExit as exit_request:
            code = exit_request.code if isinstance(exit_request.code, int) else 3
        except BaseException:  # noqa: BLE001 - reported, and the rank ends here, never returns
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # never back into the coordinator's frames

    def _reaped(self, status):
        self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) \
            else os.WEXITSTATUS(status)
        return self.returncode

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid != 0:
                self._reaped(status)
        return self.returncode

    def wait(self):
        if self.returncode is None:
            self._reaped(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def send_signal(self, signum):
        if self.returncode is None:
            os.kill(self.pid, signum)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def die_with(coordinator):
    """A forked rank is killed when its coordinator dies (PR_SET_PDEATHSIG), even mid-job; then
    checks the coordinator did not die before that was set."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != coordinator:
        os._exit(3)


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
