#!/usr/bin/env python3
"""A user's own model and samples through the real binary, as docs/your-own-bug.md describes:
a model written here in Python (not any shipped one), scripted and saved with torch.jit.save,
samples saved with safetensors, `trainrepro new` from a ds_config.json, then `trainrepro run`.
Checks the verdicts a DeepSpeed user knows to be true (no gradient_accumulation_steps: each step
sees one micro-batch; a kept loss leaks its graph; the correct config passes at ZeRO 0 and 2),
the refusals (ZeRO stage 3, a seed), and every bad input: an error at its key, exit 2, nothing
written.

Usage: check_user_models.py TRAINREPRO  (the torch venv's python: it needs torch and safetensors)
"""
import json
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from safetensors.torch import save_file

from cli_checks import check, summary, trainrepro  # noqa: E402



class Regressor(torch.nn.Module):
    """Its own parameter before its children, GELU, three outputs: unlike any shipped model."""

    def __init__(self, outputs=3):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, outputs))
        self.hidden = torch.nn.Linear(6, 16)
        self.out = torch.nn.Linear(16, outputs)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.out(torch.nn.functional.gelu(self.hidden(inputs))) * self.scale


def write_files(folder):
    torch.manual_seed(5)
    torch.jit.script(Regressor().train()).save(str(folder / "model.pt"))
    torch.jit.script(Regressor(outputs=2).train()).save(str(folder / "two-outputs.pt"))
    generator = torch.Generator().manual_seed(6)
    inputs = torch.randn(40, 6, generator=generator)
    targets = inputs[:, :3] * 0.5 + 0.1 * torch.randn(40, 3, generator=generator)
    save_file({"inputs": inputs, "targets": targets}, str(folder / "samples.safetensors"))
    save_file({"input_ids": inputs, "labels": targets}, str(folder / "hf-names.safetensors"))
    tokens = torch.randint(1, 20, (24, 8), generator=generator)
    save_file({"inputs": tokens, "targets": tokens.roll(-1, dims=1)},
              str(folder / "tokens.safetensors"))
    (folder / "not-a-model.pt").write_text("hello\n")
    adamw = {"type": "AdamW", "params": {"lr": 0.01}}
    configs = {
        "micro-only.json": {"train_micro_batch_size_per_gpu": 4, "optimizer": adamw},
        "gas4.json": {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
                      "optimizer": adamw},
        "zero2.json": {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
                       "zero_optimization": {"stage": 2}, "optimizer": adamw},
        "zero3.json": {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
                       "zero_optimization": {"stage": 3}, "optimizer": adamw},
    }
    for name, config in configs.items():
        (folder / name).write_text(json.dumps(config))


def main():
    with tempfile.TemporaryDirectory() as temporary:
        folder = pathlib.Path(temporary)
        write_files(folder)
        mine = ["--model", "model.pt", "--data", "samples.safetensors"]

        # The first field report with the user's own model: no GAS in the config.
        status, out = trainrepro("new", "--ds-config", "micro-only.json", *mine,
                                 "--intended-batch", 16, "-o", "gas-missing.json", cwd=folder)
        check(status == 0 and "trains with train_batch_size 4" in out
              and "wrote golden/" in out, "new: resolves the config and writes the golden", out)
        scenario = json.loads((folder / "gas-missing.json").read_text())
        check(scenario["model"] == {"name": "torchscript", "options": {"file": "model.pt"}}
              and scenario["deepspeed"]["train_micro_batch_size_per_gpu"] == 4
              and scenario["golden"]["train_batch_size"] == 16
              and scenario["expect"] == {"outcome": "pass"}, "new: the scenario as written",
              json.dumps(scenario))
        status, out = trainrepro("run", "gas-missing.json", cwd=folder)
        check(status == 1 and "effective batch is 4, not 16" in out,
              "run: a missing gradient_accumulation_steps is diagnosed on the user's model", out)

        status, out = trainrepro("new", "--ds-config", "gas4.json", *mine, "-o", "gas4.json.s",
                                 "--name", "gas4", cwd=folder)
        check(status == 0 and "trains with train_batch_size 16" in out, "new: GAS 4", out)
        status, out = trainrepro("run", "gas4.json.s", cwd=folder)
        check(status == 0 and "passed" in out, "run: the correct config passes", out)

        status, out = trainrepro("new", "--ds-config", "zero2.json", *mine, "--world-size", 2,
                                 "-o", "zero2-2ranks.json", cwd=folder)
        check(status == 0, "new: ZeRO 2 on 2 ranks", out)
        status, out = trainrepro("run", "zero2-2ranks.json", cwd=folder)
        check(status == 0 and "passed" in out and "ZeRO stage 2, 2 rank(s)" in out,
              "run: ZeRO stage 2 on 2 ranks passes with the user's model", out)

        status, out = trainrepro("new", "--ds-config", "gas4.json", *mine, "--habit",
                                 "keep=loss_with_graph", "--habit", "steps=40", "-o",
                                 "keeps-loss.json", cwd=folder)
        check(status == 0, "new: habits become loop keys", out)
        status, out = trainrepro("run", "keeps-loss.json", cwd=folder)
        check(status == 1 and "host_memory_leak" in out and "Fix: keep loss.item()" in out,
              "run: a kept loss leaks the user's model's graph", out)

        status, out = trainrepro("new", "--ds-config", "zero3.json", *mine, "-o", "zero3.json.s",
                                 "--name", "zero3", cwd=folder)
        check(status == 0, "new: a ZeRO 3 config is a valid scenario", out)
        status, out = trainrepro("run", "zero3.json.s", cwd=folder)
        check(status == 2 and "/deepspeed/zero_optimization/stage" in out
              and "no submodule" in out, "run: ZeRO stage 3 refused with why", out)

        status, out = trainrepro("new", "--ds-config", "gas4.json", "--data", "tokens.safetensors",
                                 "-o", "builtin-gpt.json", cwd=folder)
        built = json.loads((folder / "builtin-gpt.json").read_text()) if status == 0 else {}
        check(status == 0 and built["model"]["name"] == "gpt"
              and built["model"]["options"]["max_seq_len"] == 8,
              "new: --data alone sizes the built-in GPT to the file", out)
        status, out = trainrepro("run", "builtin-gpt.json", cwd=folder)
        check(status == 0, "run: the built-in GPT on the user's tokens passes", out)

        # Bad input: exit 2, the key, nothing written.
        def refused(args, needle, what, output_file):
            status, out = trainrepro("new", "--ds-config", "gas4.json", *args, "-o", output_file,
                                     "--no-golden", cwd=folder)
            check(status == 2 and needle in out and not (folder / output_file).exists(), what, out)

        refused(["--model", "missing.pt", "--data", "samples.safetensors"],
                "/model/options/file: expected a TorchScript module", "a missing model file",
                "bad1.json")
        refused(["--model", "not-a-model.pt", "--data", "samples.safetensors"],
                "not a TorchScript module torch.jit.load can read", "a file that is no model",
                "bad2.json")
        refused(["--model", "model.pt", "--data", "hf-names.safetensors"],
                "unknown tensor \"input_ids\"", "tensors under other names", "bad3.json")
        refused(["--model", "model.pt"], "--data: your own model needs your own samples",
                "a model without samples", "bad4.json")
        refused([*mine, "--habit", "keep=loss_with_grap"], "/loop/keep", "a misspelt habit",
                "bad5.json")
        status, out = trainrepro("new", "--ds-config", "gas4.json", *mine, "-o", "gas4.json.s",
                                 "--name", "gas4", cwd=folder)
        check(status == 2 and "already exists" in out, "an existing scenario is kept", out)

        # A seed means nothing for a file of weights; a wrong output shape names the file.
        scenario = json.loads((folder / "gas4.json.s").read_text())
        scenario["model"]["seed"] = 3
        (folder / "seeded.json").write_text(json.dumps(scenario))
        status, out = trainrepro("run", "seeded.json", cwd=folder)
        check(status == 2 and "seeded.json:/model/seed" in out, "a seed for a file is refused",
              out)
        scenario["model"] = {"name": "torchscript", "options": {"file": "two-outputs.pt"}}
        scenario["name"] = "two-outputs"
        (folder / "two-outputs.json").write_text(json.dumps(scenario))
        status, out = trainrepro("golden", "--update", "two-outputs.json", cwd=folder)
        check(status == 2 and "two-outputs.json:/model/options/file: " in out
              and "two-outputs.pt: forward returned (16, 2)" in out,
              "outputs of the wrong shape name the file and the shape needed", out)
        # export --python: a script for an upstream issue (run against DeepSpeed by oracle/exports).
        repo = pathlib.Path(__file__).resolve().parents[2]
        status, out = trainrepro("export", repo / "scenarios/accumulation/gas-missing.json",
                                 "--python", "-o", "repro.py", cwd=folder)
        script = (folder / "repro.py").read_text() if status == 0 else ""
        try:
            compile(script, "repro.py", "exec")
            compiles = bool(script)
        except SyntaxError as error:
            compiles, out = False, out + str(error)
        check(status == 0 and compiles and '"train_micro_batch_size_per_gpu": 8' in script
              and "def main()" in script and "class SampleSource" in script,
              "export: a self-contained script holding the config verbatim", out)
        status, out = trainrepro("export", repo / "scenarios/accumulation/gas-missing.json",
                                 "--python", "-o", "repro.py", cwd=folder)
        check(status == 2 and "already exists" in out, "export: an existing script is kept", out)
        status, out = trainrepro("export", "gas4.json.s", "--python", "-o", "mine.py", cwd=folder)
        check(status == 2 and "gas4.json.s:/model/name: export --python writes the built-in "
              "models only" in out and not (folder / "mine.py").exists(),
              "export: a TorchScript model is refused with why", out)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
