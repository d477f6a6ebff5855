"""`trainrepro run --engine deepspeed` (and `--engine fsdp2`): one rank of a scenario trained by the
real DeepSpeed (ds_worker.py) or by PyTorch's FSDP2 (fsdp2_worker.py, JOB["engine"] "fsdp2"),
written out as the trace trainrepro's reference engine produces (harness/loop/trace.h).

Usage: deepspeed_engine_worker.py JOB.json
  Started once (by trainrepro, without TRAINREPRO_WORKER_RANKS_STARTED): chooses the master port, writes it to PREFIX.port (trainrepro
  removes DeepSpeed's /dev/shm buffers named after it, however the run ends), and with
  JOB["world_size"] > 1 starts one process per rank (gloo), each running this file with RANK set;
  rank 0's trace is the run's, unless a rank failed. JOB holds the scenario's DeepSpeed config (verbatim), loop, steps, parameter groups and client
  optimizer, the golden's key (model, data), its file and trainable parameter names, and "trace":
  the path prefix of what this writes: PREFIX.safetensors (per recorded optimizer step, the
  first JOB["steps"] of JOB["loop_steps"], the gradients before clipping as "step<i>/grad/<name>"
  and the parameters after it as "step<i>/param/<name>"), then PREFIX.json (written last, renamed into place: its presence means the tensors are whole).
  The loop itself is ds_worker.run, the one the DeepSpeed oracle runs. With JOB["memory"] true,
  memory_census.py samples memory where the reference engine's probes do, into PREFIX.json's
  "memory" (samples, storages alive at the end with their birth steps, a kept tensor's cost).
  With JOB["time_steps"] true (`perf run --engine deepspeed`), PREFIX.json's "step_seconds" and
  "step_cpu_seconds" hold each optimizer step's wall and CPU time, the worker's recording left out.
Exit status: 0 when PREFIX.json was written (whatever it says), 3 otherwise.

Usage: deepspeed_engine_worker.py --serve FOLDER WORLD_SIZE [ENGINE]
  The same ranks trained job after job (serving.py), each job as above; ENGINE deepspeed (the
  default) or fsdp2.
"""
import glob
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
import traceback

os.environ.setdefault("DS_ACCELERATOR", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TRACE_FORMAT = "trainrepro-deepspeed-trace"
TRACE_FORMAT_VERSION = 2
# What DeepSpeed says when this machine cannot run a precision (fp16 on a CPU).
REFUSED_ON_THIS_DEVICE = "is not supported on your device"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def json_safe(value):
    """VALUE with every non-finite float spelled as a string: "NaN", "Infinity", "-Infinity".
    Python's json writes them as bare NaN and Infinity, which no JSON reader accepts, so a run
    that diverged (its losses NaN) gave an unreadable trace instead of its verdict;
    harness/worker/worker_trace.cpp reads the strings back as numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def write_json_atomically(path, value):
    with open(path + ".partial", "w") as out:
        json.dump(json_safe(value), out, allow_nan=False)
    os.replace(path + ".partial", path)


def check_samples(job, torch, zoo):
    """The zoo's generator must give the golden's stored samples: otherwise DeepSpeed would train
    on other data than the reference engine and the golden."""
    from safetensors.torch import load_file
    tensors = load_file(job["golden"]["file"])
    count = tensors["data/inputs"].shape[0]
    batch = zoo.SampleSource(job["data"]).samples(0, count, torch.float64)
    for what, ours in (("inputs", batch.inputs), ("targets", batch.targets), ("mask", batch.mask)):
        theirs = tensors.get(f"data/{what}")
        if theirs is None:
            continue
        same = ours is not None and ours.shape == theirs.shape and ours.dtype == theirs.dtype and (
            float((ours - theirs).abs().max()) <= 1e-12 if ours.is_floating_point()
            else torch.equal(ours, theirs))
        if not same:
            raise RuntimeError(f"the worker's data generator (zoo.py) differs from the golden's "
                               f"data/{what}: {job['golden']['file']}")


def versions(torch, engine):
    found = {"engine": engine, "torch": torch.__version__.split("+")[0],
             "python": platform.python_version()}
    if engine == "deepspeed":
        import deepspeed
        found["deepspeed"] = deepspeed.__version__
    return found


def trace_of(record, names):
    """The record ds_worker.run filled, as the trace's JSON and tensors."""
    tensors = {}
    steps = []
    for i, step in enumerate(record["steps"]):
        for name, gradient, parameter in zip(names, step["gradients"], step["parameters"]):
            tensors[f"step{i}/grad/{name}"] = gradient.detach().contiguous().cpu()
            tensors[f"step{i}/param/{name}"] = parameter.detach().contiguous().cpu()
        steps.append({key: step[key] for key in ("micro_step", "through_engine", "gradient_norm",
                                                 "recorded", "lr", "loss_scale", "skipped")})
    engine = record["engine"]
    trace = {
        "parameter_names": names,
        "micro_steps": [{"loss": loss, "items": items} for loss, items in
                        zip(record["micro_step_losses"], record["micro_step_items"])],
        "steps": steps,
        "counters": {"micro_steps": engine["micro_steps"], "global_steps": engine["global_steps"],
                     "skipped_steps": engine["skipped_steps"]},
        "resolved": {key: engine[key] for key in (
            "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
            "world_size", "gradient_clipping", "zero_stage")},
    }
    if "memory" in record:
        trace["memory"] = record["memory"]
    if record.get("step_seconds"):  # job["time_steps"]: each optimizer step's own time
        trace["step_seconds"] = record["step_seconds"]
        trace["step_cpu_seconds"] = record["step_cpu_seconds"]
    return trace, tensors


def remove_shared_memory_buffers(port):
    """DeepSpeed's CPU accelerator all-reduces through /dev/shm files named after the master
    address and port (67 MB each, even on one rank) and never removes them."""
    for path in glob.glob(f"/dev/shm/deepspeed_allreduce_buffer_*_127.0.0.1_{port}_*"):
        try:
            os.unlink(path)
        except OSError:
            pass


def start_ranks(job_path, prefix, world_size):
    """One process per rank, each writing PREFIX.rank<r>.json; rank 0's files become the run's,
    or the first failed rank's status when one failed."""
    port = free_port()
    with open(prefix + ".port", "w") as out:
        out.write(str(port))
    processes = [subprocess.Popen([sys.executable, os.path.abspath(__file__), job_path],
                                  env=rank_environment(rank, world_size, port))
                 for rank in range(world_size)]
    codes = [process.wait() for process in processes]
    remove_shared_memory_buffers(port)
    return publish_rank_traces(prefix, world_size, codes)


def rank_environment(rank, world_size, port):
    return dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
                LOCAL_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                TRAINREPRO_WORKER_RANKS_STARTED="1")


def publish_rank_traces(prefix, world_size, codes):
    """Rank 0's PREFIX.rank0.* become PREFIX.*, or the first failed rank's status when one
    failed: 0, or 3 when no rank wrote a trace."""
    chosen = None
    for rank in range(world_size):
        path = f"{prefix}.rank{rank}.json"
        if not os.path.exists(path):
            continue  # trainrepro says the trace is missing, with this process's output
        status = json.load(open(path)).get("status")
        if rank == 0 and chosen is None:
            chosen = path
        if status == "error":
            chosen = path
            break
    if chosen is None:
        print(f"no rank wrote a trace (exit codes {codes})", file=sys.stderr)
        return 3
    if os.path.exists(f"{prefix}.rank0.safetensors"):
        os.replace(f"{prefix}.rank0.safetensors", prefix + ".safetensors")
    os.replace(chosen, prefix + ".json")
    return 0


def train_rank(job, rank, world_size, engines=None, make_memory_probe=None):
    """Trains JOB on this rank and writes its PREFIX.rank<R>.json (and rank 0's tensors); returns
    the status written. ENGINES, when given, receives the engine deepspeed.initialize made, and
    make_memory_probe replaces memory_census.MemoryCensus (serving.py: both are undone after the
    job)."""
    prefix = f"{job['trace']}.rank{rank}"
    out = {"format": TRACE_FORMAT, "format_version": TRACE_FORMAT_VERSION, "rank": rank}
    started = time.time()
    try:
        import torch
        import zoo
        engine = job.get("engine", "deepspeed")
        if engine == "fsdp2":
            import fsdp2_worker as worker
        else:
            import ds_worker as worker
        torch.set_num_threads(1)
        torch.set_default_dtype(torch.float32)
        out["versions"] = versions(torch, engine)
        check_samples(job, torch, zoo)
        record = {"rank": rank, "world_size": world_size, "error": None}
        if not job.get("memory"):
            make_memory_probe = None
        elif make_memory_probe is None:
            import memory_census
            make_memory_probe = memory_census.MemoryCensus
        if engines is None:
            worker.run(job, rank, world_size, record, make_memory_probe)
        else:
            worker.run(job, rank, world_size, record, make_memory_probe, engines=engines)
        refusal = record.get("initialize_error")
        if refusal:
            message = f"{refusal['type']}: {refusal['message']}"
            if REFUSED_ON_THIS_DEVICE in refusal["message"]:
                out.update(status="skipped", reason="DeepSpeed refuses this configuration on "
                           f"this machine: {message}")
            else:
                out.update(status="refused", reason=message)
        else:
            trace, tensors = trace_of(record, job["golden"]["parameters"])
            if rank == 0:  # the ranks' gradients and parameters agree after the all-reduce
                from safetensors.torch import save_file
                save_file(tensors, prefix + ".safetensors")
            out.update(status="trained", **trace)
    except Exception as exception:  # noqa: BLE001 - every failure is reported, with its trace
        if type(exception).__name__ == "GradientsUnreadable":  # ds_worker's: skipped, with why
            out.update(status="skipped", reason=f"--engine deepspeed: {exception}")
        elif type(exception).__name__ == "NotExpressible":  # fsdp2_worker's: skipped, with why
            out.update(status="skipped", reason=f"--engine fsdp2: {exception}")
        else:
            out.update(status="error", reason=f"{type(exception).__name__}: {exception}",
                       traceback=traceback.format_exc()[-4000:])
    out["seconds"] = time.time() - started
    write_json_atomically(prefix + ".json", out)
    return out["status"]


def main():
    if sys.argv[1] == "--serve":  # serving.py: FOLDER WORLD_SIZE [ENGINE]
        import serving
        folder, world_size = sys.argv[2], int(sys.argv[3])
        engine = sys.argv[4] if len(sys.argv) > 4 else "deepspeed"
        if os.environ.get("TRAINREPRO_WORKER_RANKS_STARTED") != "1":
            return serving.serve_ranks(folder, world_size, engine)
        return serving.serve_jobs(folder, int(os.environ["RANK"]), world_size, engine)
    job = json.load(open(sys.argv[1]))
    if os.environ.get("TRAINREPRO_WORKER_RANKS_STARTED") != "1":
        return start_ranks(sys.argv[1], job["trace"], int(job.get("world_size", 1)))
    train_rank(job, int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    try:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - the trace is written; nothing else matters now
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
