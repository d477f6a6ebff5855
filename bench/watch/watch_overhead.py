"""What `trainrepro watch` costs a training step, measured as ratios in one run (these machines
are shared and noisy): a small GPT-style transformer trained by a plain DeepSpeed loop, run
unwatched and watched in alternation, each run timing its own optimizer steps. Reported: the
median step time of the watched run over the unwatched one in three phases: the judged steps
(1..K, each window's inputs cloned; the golden is computed when the K-th window closes), the
memory-sampled steps (K+1..M, one census at each boundary) and the steps after M (nothing but
the wrappers left).

Usage: python3 bench/watch/watch_overhead.py TRAINREPRO PYTHON [--pairs 3] [--steps 80]
PYTHON: one with DeepSpeed (tests/deepspeed_oracle/deepspeed_python). Not a test: it asserts
nothing, it prints the ratios for a person (README "Watching your own script").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPT = r'''
import json, os, sys, time
os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed, torch
import torch.nn.functional as F
torch.set_num_threads(1)
steps = int(sys.argv[1])
torch.manual_seed(0)

class Gpt(torch.nn.Module):
    def __init__(self, vocabulary=256, width=128, layers=2, length=32):
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

model = Gpt()
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config={
    "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "gradient_clipping": 0.0})
generator = torch.Generator().manual_seed(1)
times, started = [], time.perf_counter()
while engine.global_steps < steps:
    ids = torch.randint(0, 256, (8, 33), generator=generator)
    logits = engine(ids[:, :-1])
    engine.backward(F.cross_entropy(logits.reshape(-1, 256), ids[:, 1:].reshape(-1)))
    before = engine.global_steps
    engine.step()
    if engine.global_steps > before:
        now = time.perf_counter()
        times.append(now - started)
        started = now
print("STEP_TIMES " + json.dumps(times))
'''


def step_times(command):
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    for line in done.stdout.splitlines():
        if line.startswith("STEP_TIMES "):
            return json.loads(line[len("STEP_TIMES "):])
    sys.exit(f"no step times from {command}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trainrepro")
    parser.add_argument("python")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--watched-steps", type=int, default=4)
    parser.add_argument("--memory-steps", type=int, default=40)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "gpt_train.py")
        with open(script, "w") as out:
            out.write(SCRIPT)
        launch = [options.python, "-m", "torch.distributed.run", "--standalone",
                  "--nproc_per_node", "1", script, str(options.steps)]
        watch = [os.path.abspath(options.trainrepro), "watch", "--steps",
                 str(options.watched_steps), "--memory-steps", str(options.memory_steps), "--"]
        phases = {"judged steps": (1, options.watched_steps),
                  "memory-sampled steps": (options.watched_steps + 1, options.memory_steps),
                  "after the memory steps": (options.memory_steps + 1, options.steps)}
        ratios = {name: [] for name in phases}
        for pair in range(options.pairs):
            plain = step_times(launch)
            watched = step_times(watch + launch)
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


if __name__ == "__main__":
    main()
