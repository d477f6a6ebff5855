"""The parent side of serving.py in Python, for its tests and its timing without trainrepro (whose
own parent is harness/worker/worker_set.cpp, `run --serve-workers`): a set started, jobs handed
over one by one, answers awaited with a timeout, a one-shot run of the same job for comparison."""
import glob
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WORKER = ROOT / "python" / "trainrepro_worker" / "deepspeed_engine_worker.py"
SKIP = 77
sys.path.insert(0, str(HERE))  # compare_engines.py, beside this file


def deepspeed_python():
    """The DeepSpeed 0.19.8 of trainrepro's cache (compare_engines.py's choice), or None where
    that falls back to a python3 that may lack DeepSpeed."""
    from compare_engines import deepspeed_python as chosen
    python = chosen()
    return None if python == "python3" and not os.environ.get("TRAINREPRO_DEEPSPEED_PYTHON") \
        else python


def load_job(name):
    """A job of serving_jobs/ (kept as trainrepro's deepspeed_job wrote it, the golden's path
    relative to the repository), the golden made absolute."""
    job = json.loads((HERE / "serving_jobs" / f"{name}.json").read_text())
    job["golden"]["file"] = str(ROOT / job["golden"]["file"])
    return job


def write_json_atomically(path, value):
    with open(f"{path}.partial", "w") as out:
        json.dump(value, out)
    os.replace(f"{path}.partial", path)


class ServingSet:
    """One coordinator and its ranks; each job's trace goes to its own folder under `folder`."""

    def __init__(self, python, world_size, folder, engine="deepspeed", prefix=()):
        """PREFIX: arguments between the Python and the worker (check_rank_start.py's wrapper)."""
        self.folder = pathlib.Path(folder)
        self.serve = self.folder / "serve"
        self.serve.mkdir(parents=True)
        self.output = open(self.folder / "serve-output.txt", "w")
        self.process = subprocess.Popen(
            [python, *prefix, str(WORKER), "--serve", str(self.serve), str(world_size), engine],
            stdout=self.output, stderr=subprocess.STDOUT, start_new_session=True)
        self.jobs = 0

    def submit(self, job):
        """Hands JOB over; returns (its number, its trace prefix)."""
        self.jobs += 1
        job_folder = self.folder / f"job-{self.jobs}"
        job_folder.mkdir()
        job = dict(job, trace=str(job_folder / "trace"))
        write_json_atomically(self.serve / f"job-{self.jobs}.json", job)
        return self.jobs, job["trace"]

    def answer(self, n, timeout):
        """Job N's answer, or {"status": "timed_out"} (the set is then killed), or
        {"status": "set_ended", ...} when the coordinator ended without answering."""
        path = self.serve / f"answer-{n}.json"
        deadline = time.time() + timeout
        while not path.exists():
            if self.process.poll() is not None and not path.exists():
                return {"status": "set_ended", "exit_code": self.process.returncode}
            if time.time() > deadline:
                self.kill()
                return {"status": "timed_out"}
            time.sleep(0.01)
        return json.loads(path.read_text())

    def rank_pids(self):
        """The ranks' process ids (the coordinator's children)."""
        children = pathlib.Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(p) for p in children.read_text().split()] if children.exists() else []

    def stop(self, timeout=60):
        (self.serve / "stop").touch()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        finally:
            self.output.close()

    def kill(self):
        try:
            os.killpg(self.process.pid, 9)  # its own session: the coordinator and its ranks
        except ProcessLookupError:
            pass
        self.process.wait()
        # A killed coordinator cannot remove DeepSpeed's /dev/shm buffers (67 MB each): the
        # parent does, by the set's port, as trainrepro does for a one-shot worker.
        port = self.serve / "port"
        if port.exists():
            for path in glob.glob(f"/dev/shm/deepspeed_allreduce_buffer_*_127.0.0.1_"
                                  f"{port.read_text().strip()}_*"):
                os.unlink(path)


def run_one_shot(python, job, folder):
    """JOB trained as trainrepro trains it today: a fresh coordinator and fresh ranks."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    job = dict(job, trace=str(folder / "trace"))
    write_json_atomically(folder / "job.json", job)
    completed = subprocess.run([python, str(WORKER), str(folder / "job.json")],
                               capture_output=True, text=True, timeout=600)
    return completed, job["trace"]
