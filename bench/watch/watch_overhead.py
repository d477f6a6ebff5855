"""What `trainrepro watch` costs a training step, measured as ratios in one run (these machines
are shared and noisy): a small GPT-style transformer trained by a plain DeepSpeed loop, run
unwatched and watched in alternation, each run timing its own optimizer steps. Reported: the
median step time of the watched run over the unwatched one in three phases: the judged steps
(1..K, each window's inputs cloned; its golden computed at its boundary), the
memory-sampled steps (K+1..M, one census at each boundary) and the steps after M (nothing but
the wrappers left). Then the census alone, the part of a memory-sampled step that is the watch's:
the same loop unwatched calls memory_census.py itself at every boundary from step 6 and times
each call; reported as the median census over the median step of that run.

--model perf is scenarios/perf/gpt-adamw-zero1.json as trainrepro's DeepSpeed worker trains it:
the zoo's GPT (python/trainrepro_worker/zoo.py, the reference engine's model: width 48, 2 layers,
64 tokens, 32 positions), the scenario's token_sequences data (8-32 tokens), its ds_config
verbatim (ZeRO 1, micro batch 4, GAS 2, AdamW). Until 2026-12-05 it was a torch
TransformerEncoder of that size at ZeRO 0, which was not the scenario. --model wide (the
default) is that TransformerEncoder at width 128, vocabulary 256, micro batch 8, ZeRO 0.

Usage: python3 bench/watch/watch_overhead.py TRAINREPRO PYTHON [--pairs 3] [--steps 80]
                                             [--model wide|perf]
PYTHON: one with DeepSpeed (tests/deepspeed_oracle/deepspeed_python). Not a test: it asserts
nothing, it prints the ratios for a person (docs/watch.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# torchrun (torch.distributed.elastic) leaves a torchelastic_* folder in $TMPDIR after every
# launch: the launches here get a $TMPDIR of this script's own, removed when it ends.
SCRATCH = tempfile.TemporaryDirectory(prefix="trainrepro-torchrun-")
os.environ["TMPDIR"] = SCRATCH.name

SCRIPT = r"""
import json, os, sys, time
os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed, torch
import torch.nn.functional as F
torch.set_num_threads(1)
steps, model_kind, census_folder = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with_census = len(sys.argv) > 4
torch.manual_seed(0)

class Gpt(torch.nn.Module):
    def __init__(self, vocabulary, width, layers=2, length=32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocabulary, width)
        self.position = torch.nn.Parameter(torch.zeros(length, width))
        layer = torch.nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0,
                                                 batch_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(width, vocabulary)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(length))

    def forward(self, ids):
        return self.head(self.blocks(self.embed(ids) + self.position, mask=self.mask,
                                     is_causal=True))

if model_kind == "wide":
    vocabulary, width, micro_batch = 256, 128, 8
    model = Gpt(vocabulary, width)
    config = {"train_micro_batch_size_per_gpu": micro_batch, "gradient_accumulation_steps": 2,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "gradient_clipping": 0.0}
    generator = torch.Generator().manual_seed(1)

    def micro_batches():
        while True:
            ids = torch.randint(0, vocabulary, (micro_batch, 33), generator=generator)
            yield ids[:, :-1], ids[:, 1:]

    def loss_of(outputs, targets):
        return F.cross_entropy(outputs.reshape(-1, vocabulary), targets.reshape(-1))
else:
    # The perf scenario as trainrepro's DeepSpeed worker trains it: the zoo's GPT (the
    # reference engine's, models/gpt_model.cpp), its token_sequences data, its ds_config
    # verbatim, each micro-batch's loss the mean over its counted tokens.
    sys.path.insert(0, census_folder)
    import zoo
    scenario = json.load(open(model_kind))
    model = zoo.build_model_with_defaults(scenario["model"])
    config = scenario["deepspeed"]
    micro_batch = config["train_micro_batch_size_per_gpu"]
    source = zoo.SampleSource(zoo.data_with_defaults(scenario["data"]))

    def micro_batches():
        begin = 0
        while True:
            batch = source.samples(begin, begin + micro_batch)
            begin += micro_batch
            yield batch.inputs, batch

    def loss_of(outputs, batch):
        return zoo.Gpt.loss_sum(outputs, batch) / batch.items

engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                       config=config)
census, census_times = None, []
times, started = [], time.perf_counter()
batches = micro_batches()
while engine.global_steps < steps:
    inputs, targets = next(batches)
    loss = loss_of(engine(inputs), targets)
    engine.backward(loss)
    before = engine.global_steps
    engine.step()
    if engine.global_steps > before:
        now = time.perf_counter()
        times.append(now - started)
        if with_census and engine.global_steps == 5:
            sys.path.insert(0, census_folder)
            import memory_census
            census = memory_census.MemoryCensus(lambda: [])
        elif census is not None:
            # Where the watch takes it: at the boundary, the step's loss and outputs alive.
            census.sample("boundary", int(engine.micro_steps), int(engine.global_steps))
            census_times.append(time.perf_counter() - now)
        started = time.perf_counter()
print("STEP_TIMES " + json.dumps(times))
print("CENSUS_TIMES " + json.dumps(census_times))
"""


def timings(command):
    """The run's step times and census times (seconds)."""
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    found = {}
    for line in done.stdout.splitlines():
        name, _, values = line.partition(" ")
        if name in ("STEP_TIMES", "CENSUS_TIMES"):
            found[name] = json.loads(values)
    if "STEP_TIMES" not in found:
        sys.exit(f"no step times from {command}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return found


PERF_SCENARIO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                             "scenarios", "perf", "gpt-adamw-zero1.json")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trainrepro")
    parser.add_argument("python")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--watched-steps", type=int, default=4)
    parser.add_argument("--memory-steps", type=int, default=40)
    parser.add_argument("--model", choices=("wide", "perf"), default="wide")
    options = parser.parse_args()
    census_folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                 "python", "trainrepro_worker")
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "gpt_train.py")
        with open(script, "w") as out:
            out.write(SCRIPT)
        launch = [options.python, "-m", "torch.distributed.run", "--standalone",
                  "--nproc_per_node", "1", script, str(options.steps),
                  PERF_SCENARIO if options.model == "perf" else "wide", census_folder]
        watch = [os.path.abspath(options.trainrepro), "watch", "--steps",
                 str(options.watched_steps), "--memory-steps", str(options.memory_steps), "--"]
        phases = {"judged steps": (1, options.watched_steps),
                  "memory-sampled steps": (options.watched_steps + 1, options.memory_steps),
                  "after the memory steps": (options.memory_steps + 1, options.steps)}
        ratios = {name: [] for name in phases}
        census_shares = []
        for pair in range(options.pairs):
            plain = timings(launch)["STEP_TIMES"]
            watched = timings(watch + launch)["STEP_TIMES"]
            alone = timings(launch + ["with-census"])
            census_shares.append(statistics.median(alone["CENSUS_TIMES"]) /
                                 statistics.median(alone["STEP_TIMES"][6:]))
            for name, (first, last) in phases.items():
                ratio = (statistics.median(watched[first:last]) /
                         statistics.median(plain[first:last]))
                ratios[name].append(ratio)
            print(f"pair {pair + 1}: unwatched median step "
                  f"{statistics.median(plain[options.memory_steps:]) * 1e3:.1f} ms", flush=True)
        for name, values in ratios.items():
            print(f"{name}: watched / unwatched median step time "
                  f"{statistics.median(values):.3f} (pairs: "
                  f"{', '.join(f'{v:.3f}' for v in values)})")
        print(f"one census / median step: {statistics.median(census_shares) * 100:.2f} % "
              f"(pairs: {', '.join(f'{v * 100:.2f} %' for v in census_shares)})")


if __name__ == "__main__":
    main()
