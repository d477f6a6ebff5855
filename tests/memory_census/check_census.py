"""The memory census of the Python engines (python/trainrepro_worker/memory_census.py) on a plain
torch loop that keeps each step's detached outputs, 40 boundaries (no DeepSpeed needed):

- a census leaves no garbage of its own: after sample() (which collects first), a collection
  finds nothing. The census's dicts once lived on in a reference cycle until the next census
  collected them, between its two heap reads, so their bytes were booked as the training's heap
  shrinking: the host heap beyond tensors read -17 to -63 KiB/step beside a growing leak.
- the host heap beyond tensors does not shrink while the loop keeps tensors (Theil-Sen slope
  over the boundaries after warm-up, as the memory judge computes it);
- every step's kept output is alive at the end, born at the steps done before it (the census
  stops walking the tensors frozen at the first boundary, the first output among them; it never
  misses a survivor made since).

Usage: python check_census.py   (a Python with torch; exit 1 with what differs)
"""
import gc
import os
import statistics
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                                "trainrepro_worker"))
warnings.filterwarnings("ignore", category=FutureWarning)
import torch  # noqa: E402

import memory_census  # noqa: E402

STEPS, WARMUP = 40, 5


def theil_sen(values):
    slopes = [(values[j] - values[i]) / (j - i)
              for i in range(len(values)) for j in range(i + 1, len(values))]
    return statistics.median(slopes)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 48))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    census = memory_census.MemoryCensus(lambda: [])
    kept, failures, census_garbage = [], [], []
    for step in range(1, STEPS + 1):
        inputs = torch.randn(32, 64)
        outputs = model(inputs)
        outputs.square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        kept.append(outputs.detach())
        del inputs, outputs
        census.sample("boundary", step, step)
        census_garbage.append(gc.collect())
    if any(census_garbage):
        failures.append(f"a census left garbage cycles: {census_garbage}")
    boundaries = [s for s in census.samples if s["optimizer_step"] > WARMUP]
    beyond = [s["host_heap_bytes"] - s["cpu_tensor_bytes"] for s in boundaries]
    tensors = [s["cpu_tensor_bytes"] for s in boundaries]
    host_slope, tensor_slope = theil_sen(beyond), theil_sen(tensors)
    print(f"live tensors {tensor_slope:+.0f} B/step, host heap beyond tensors {host_slope:+.0f} "
          f"B/step over boundaries {WARMUP + 1}..{STEPS}")
    if tensor_slope != 32 * 48 * 4:
        failures.append(f"live tensors grow by {tensor_slope} B/step, not one kept output "
                        f"({32 * 48 * 4} B)")
    if host_slope < 0:
        failures.append(f"the host heap beyond tensors shrinks by {-host_slope:.0f} B/step while "
                        "the loop keeps tensors")
    births = sorted(birth for nbytes, birth in census.result()["live_at_end"]
                    if nbytes == 32 * 48 * 4)
    # A storage is born at the steps done at the census before the one that first saw it.
    if births != list(range(STEPS)):
        failures.append(f"kept outputs' birth steps {births}, not one per step 0..{STEPS - 1}")
    for failure in failures:
        print("FAIL " + failure)
    print("census checks passed" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
