#!/usr/bin/env python3
"""Runs every memory habit on both models many times in one trainrepro process and checks that
each gets the same verdict every time, and the verdict a user expects (a leak, or bounded).

Writes N copies of each habit x model scenario into a temporary folder, runs
`trainrepro run FOLDER --results R` once (so later scenarios also run after earlier ones, as in
a nightly run), and tallies the memory diagnoses per habit. Prints a table; exit 1 on any flip
or wrong verdict.

Usage: run_stability.py TRAINREPRO GOLDEN_DIR [--runs 30]
"""
import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tempfile

MODELS = {
    "mlp": ({"name": "mlp", "options": {"dims": [16, 64, 4]}, "seed": 31},
            {"name": "classification", "options": {"features": 16, "classes": 4}, "seed": 32}),
    "gpt": ({"name": "gpt", "options": {"vocab_size": 32, "max_seq_len": 12, "d_model": 16,
                                        "heads": 2, "layers": 1}, "seed": 43},
            {"name": "token_sequences", "options": {"vocab_size": 32, "min_length": 2,
                                                    "max_length": 12}, "seed": 44}),
}
# habit -> (loop section, leaks?)
HABITS = {
    "keep-nothing": ({"keep": "nothing"}, False),
    "keep-loss-item": ({"keep": "loss_item"}, False),
    "keep-loss-with-graph": ({"keep": "loss_with_graph"}, True),
    "keep-loss-detached": ({"keep": "loss_detached"}, True),
    "keep-loss-on-cpu": ({"keep": "loss_on_cpu"}, True),
    "keep-outputs-with-graph": ({"keep": "outputs_with_graph"}, True),
    "keep-outputs-detached": ({"keep": "outputs_detached"}, True),
    "keep-outputs-on-cpu": ({"keep": "outputs_on_cpu"}, True),  # a CPU run: still in RAM
    "eval-under-no-grad": ({"evaluation": {"every": 1, "batches": 2, "no_grad": True,
                                           "sum_as_tensor": True}}, False),
    "eval-without-no-grad-keeping-nothing": ({"evaluation": {"every": 1, "batches": 2,
                                                             "no_grad": False}}, False),
    "eval-summed-without-no-grad": ({"evaluation": {"every": 1, "batches": 2, "no_grad": False,
                                                    "sum_as_tensor": True}}, True),
    "eval-every-10-summed-without-no-grad": ({"evaluation": {"every": 10, "batches": 1,
                                                             "no_grad": False,
                                                             "sum_as_tensor": True}}, True),
}


def scenario(name, model, data, loop):
    return {
        "name": name,
        "description": "Memory stability: one habit, one model, repeated.",
        "model": model, "data": data,
        "deepspeed": {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
                      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}},
        "dtype": "float32",
        "loop": {"steps": 60 if "every" in json.dumps(loop) and '"every": 10' in json.dumps(loop)
                 else 40, **loop},
        "golden": {"train_batch_size": 8, "steps": 2},
        "expect": {"outcome": "pass"},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trainrepro")
    parser.add_argument("golden_dir")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainrepro-stability-") as work:
        work = pathlib.Path(work)
        folder, results, goldens = work / "scenarios", work / "results", work / "golden"
        folder.mkdir()
        for model_name, (model, data) in MODELS.items():
            for habit, (loop, _) in HABITS.items():
                for run in range(args.runs):
                    name = f"{model_name}-{habit}-{run:02d}"
                    body = scenario(name, model, data, loop)
                    (folder / f"{name}.json").write_text(json.dumps(body))
        subprocess.run([args.trainrepro, "golden", "--update", str(folder), "--golden-dir",
                        str(goldens)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([args.trainrepro, "run", str(folder), "--results", str(results),
                        "--golden-dir", str(goldens)], stdout=subprocess.DEVNULL)
        verdicts = collections.defaultdict(collections.Counter)
        rates = collections.defaultdict(list)
        for path in sorted(results.glob("*.json")):
            result = json.loads(path.read_text())
            model_name, rest = result["scenario"]["name"].split("-", 1)
            habit = rest.rsplit("-", 1)[0]
            memory = result.get("memory") or {}
            kinds = tuple(memory.get("diagnoses", [])) if memory.get("judged") else ("not judged",)
            verdicts[(model_name, habit)][kinds] += 1
            rates[(model_name, habit)].append(
                (memory.get("survivors", {}).get("allocations_per_step", 0.0),
                 memory.get("tensor", {}).get("bytes_per_step", 0.0)))
    failures = 0
    print(f"{'model':5} {'habit':40} {'verdict':45} {'runs':>5}  allocations/step, bytes/step")
    for (model_name, habit), counter in sorted(verdicts.items()):
        leaks_expected = HABITS[habit][1]
        (kinds, count), *others = counter.most_common()
        found_leak = any(kind.endswith("memory_leak") for kind in kinds)
        wrong = found_leak != leaks_expected or others or count != args.runs
        failures += bool(wrong)
        allocations = max(a for a, _ in rates[(model_name, habit)])
        per_step = max(b for _, b in rates[(model_name, habit)])
        print(f"{model_name:5} {habit:40} {'+'.join(kinds) or 'bounded':45} {count:>5}  "
              f"{allocations:.3g}, {per_step:.4g}{'   <-- ' + str(dict(counter)) if wrong else ''}")
    total = sum(sum(c.values()) for c in verdicts.values())
    print(f"{total} runs, {len(verdicts)} habit x model pairs, {failures} unstable or wrong")
    return 1 if failures or total != len(MODELS) * len(HABITS) * args.runs else 0


if __name__ == "__main__":
    sys.exit(main())
