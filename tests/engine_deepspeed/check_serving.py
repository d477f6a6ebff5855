"""Ranks that serve job after job (python/trainrepro_worker/serving.py) on DeepSpeed 0.19.8, CPU:
- a job that leaks (keeps the loss with its graph) then one that must pass, in both orders: the
  second job's trace (every loss, gradient, parameter) and memory (tensor bytes, allocations,
  autograd nodes at every sample, the storages alive at the end with their birth steps, host
  heap growth within HEAP_TOLERANCE_BYTES of the alone run) equal those of the job run alone;
- a job whose rank raises is answered (the parent learns it failed) and retires the set;
- a rank killed mid-job is detected by the parent ("ranks_died").

Usage: check_serving.py [PAIR]   exit 0 all ok, 1 a check failed, 77 no DeepSpeed 0.19.8.
  PAIR (default 1) names the two jobs, JOBS below: 1 and 2 ranks without ZeRO, and 2-zero3, the
  same on ZeRO stage 3 (what ZeRO-3 keeps after engine.destroy() must be put back, or the set
  retires after every job: job_isolation.RESTORED_MODULES).
"""
import json
import os
import signal
import sys
import tempfile
import time

import serving_client as client
from checklist import Checklist

# The host heap of two fresh runs of one job differs by allocator noise; the judge reads its
# growth per step (host_memory_leak), so the growth from the first host sample is compared.
HEAP_TOLERANCE_BYTES = 16 << 10
JOBS = {"1": ("mlp-keep-loss-with-graph", "mlp-keep-nothing"),
        "2": ("keep-loss-with-graph-2ranks-gas3", "matrix-stage1-ws2-gas1-sgd"),
        "2-zero3": ("keep-loss-with-graph-2ranks-gas3-stage3", "matrix-stage3-ws2-gas4-adamw")}


def trace_of(prefix):
    trace = json.load(open(prefix + ".json"))
    # Byte for byte: the same tensors, saved in the same order, make the same file.
    path = prefix + ".safetensors"
    return trace, open(path, "rb").read() if os.path.exists(path) else b""


def heap_growth(samples):
    heap = [s["host_heap_bytes"] for s in samples if s["host_heap_bytes"] >= 0]
    return [h - heap[0] for h in heap]


def differences(alone, served):
    """What differs between two traces of one job, as readable lines."""
    (a, at), (b, bt) = alone, served
    found = []
    for key in ("status", "micro_steps", "steps", "counters", "resolved"):
        if a.get(key) != b.get(key):
            found.append(f"{key} differs")
    if at != bt:
        found.append("recorded gradients or parameters differ")
    ma, mb = a.get("memory", {}), b.get("memory", {})
    for field in ("cpu_tensor_bytes", "cpu_tensor_allocations", "autograd_nodes", "point"):
        if [s[field] for s in ma["samples"]] != [s[field] for s in mb["samples"]]:
            first = next(i for i, (x, y) in enumerate(zip(ma["samples"], mb["samples"]))
                         if x[field] != y[field])
            found.append(f"memory {field} differs from sample {first}: "
                         f"{ma['samples'][first][field]} alone, {mb['samples'][first][field]} "
                         "served")
    if sorted(map(tuple, ma["live_at_end"])) != sorted(map(tuple, mb["live_at_end"])):
        found.append("storages alive at the end differ")
    worst = max((abs(x - y) for x, y in zip(heap_growth(ma["samples"]),
                                            heap_growth(mb["samples"]))), default=0)
    if worst > HEAP_TOLERANCE_BYTES:
        ga, gb = heap_growth(ma["samples"]), heap_growth(mb["samples"])
        found.append(f"host heap growth differs by {worst} B (tolerance {HEAP_TOLERANCE_BYTES}):"
                     f" alone {ga[1]} B after the first step, {ga[-1]} B at the end; served "
                     f"{gb[1]} B, {gb[-1]} B")
    return found, worst


def main():
    pair = sys.argv[1] if len(sys.argv) > 1 else "1"
    if pair not in JOBS:
        print(f"check_serving.py: PAIR must be one of {', '.join(JOBS)}, not {pair!r}")
        return 2
    world_size = int(pair.split("-")[0])
    python = client.deepspeed_python()
    if python is None:
        print("skipped: DeepSpeed 0.19.8 is not in trainrepro's cache")
        return client.SKIP
    checks = Checklist(f"serving ({pair}: {', '.join(JOBS[pair])})")
    leaky, clean = (client.load_job(name) for name in JOBS[pair])
    with tempfile.TemporaryDirectory(prefix="trainrepro-serving-") as folder:
        alone = {}
        for name, job in (("leaky", leaky), ("clean", clean)):
            completed, prefix = client.run_one_shot(python, job, f"{folder}/alone-{name}")
            checks.expect(completed.returncode == 0, f"{name} job alone: trained")
            alone[name] = trace_of(prefix)
            # What two fresh processes of one job differ by: the noise a served job is read
            # against (printed, not judged).
            _, again = client.run_one_shot(python, job, f"{folder}/alone-again-{name}")
            found, worst = differences(alone[name], trace_of(again))
            print(f"info  {name} job alone twice: host heap growth within {worst} B"
                  + "".join(f"\n      {line}" for line in found))
        for order in (("leaky", "clean"), ("clean", "leaky")):
            served = client.ServingSet(python, world_size, f"{folder}/{'-'.join(order)}")
            for position, name in enumerate(order):
                n, prefix = served.submit(leaky if name == "leaky" else clean)
                answer = served.answer(n, timeout=300)
                checks.expect(answer.get("status") == "answered" and not answer["retired"],
                              f"{' then '.join(order)}: job {n} ({name}) answered, set kept "
                              f"(left behind: {answer.get('left')})")
                if answer.get("status") != "answered":
                    break
                found, worst = differences(alone[name], trace_of(prefix))
                checks.expect(not found, f"{' then '.join(order)}: {name} job served as job "
                              f"{n} equals it alone (heap growth within {worst} B)"
                              + "".join(f"\n      {line}" for line in found))
            checks.expect(served.stop() == 0, f"{' then '.join(order)}: the set stops when asked")

        served = client.ServingSet(python, world_size, f"{folder}/raises")
        broken = json.loads(json.dumps(clean))
        broken["loop"]["stepping"] = "no_such_habit"  # ds_worker raises ValueError mid-loop
        n, prefix = served.submit(broken)
        answer = served.answer(n, timeout=300)
        trace = json.load(open(prefix + ".json")) if os.path.exists(prefix + ".json") else {}
        checks.expect(answer.get("status") == "answered" and answer.get("retired") is True and
                      trace.get("status") == "error" and "no_such_habit" in trace.get("reason", ""),
                      f"a job whose rank raises is answered as an error and retires the set "
                      f"({trace.get('reason')})")
        served.kill()

        served = client.ServingSet(python, world_size, f"{folder}/killed")
        slow = json.loads(json.dumps(clean))
        slow["loop_steps"] = 100000  # long enough to be killed mid-job
        n, _ = served.submit(slow)
        time.sleep(12)  # the imports and the first steps
        ranks = served.rank_pids()
        if ranks:
            os.kill(ranks[-1], signal.SIGKILL)
        answer = served.answer(n, timeout=120)
        checks.expect(len(ranks) == world_size and answer.get("status") == "ranks_died",
                      f"a rank killed mid-job is reported: {answer}")
        served.kill()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
