#!/usr/bin/env python3
"""Every config of the corpus (configs/, sources in sources.json), pasted as a new user would:
trained at world size 1 on the small MLP, or refused with a reason. Each config becomes a
scenario; a config with "auto" gets an "hf_trainer" section that agrees with every value the config
fixes (as a run that got past the Trainer's checks had), per-device batch 2, GAS 2 and lr 1e-3
otherwise, and a golden of the batch those arguments intend; one without an optimizer (and no "auto") the client optimizer its
script would pass (torch AdamW, lr 1e-3), as `trainrepro new --client-optimizer` writes it; a config that is hjson but not strict JSON (comments,
commas left out, no root braces, quoteless values: DeepSpeed reads config files with hjson)
cannot be embedded in a scenario as it is and goes through `config resolve` only.

    check_corpus.py TRAINREPRO [--write-expected]

Prints one line per config and the tally: trains; refused-by-deepspeed (DeepSpeed's own rule,
or the Trainer's or accelerate's); loses-accumulation (trains, but not with the batch the
Trainer's arguments intend: a reproduced bug); trains-shifted-by-deepspeed (trains, but at ZeRO
stage 0 in fp16/bf16 DeepSpeed's FP16_Optimizer steps the optimizer once at initialization, so
every update differs from the golden's); not-implemented (by the reference engine);
not-json (not even hjson: DeepSpeed could not read the file either); resolves (an hjson file
that is not strict JSON, read by `config resolve` as DeepSpeed reads it). Exits 1 when any config ends otherwise
than expected.json says (the status and a phrase of the reason), so a change in what the
harness makes of a real config shows here; --write-expected records the current outcomes.
"""
import json
import re
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
HF_TRAINER = {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2,
              "learning_rate": 0.001}
CLIENT_OPTIMIZER = "AdamW lr=0.001"  # as `new --client-optimizer` takes it
MODEL = {"name": "mlp", "options": {"dims": [12, 24, 3], "activation": "tanh"}, "seed": 1}
DATA = {"name": "classification", "options": {"features": 12, "classes": 3}, "seed": 2}
# A golden batch this big would only make the check slow (BERT's 65536 samples); such configs
# still resolve and are judged on a golden of their own size, capped here.
LARGEST_GOLDEN_BATCH = 4096


def has_auto(node):
    if isinstance(node, dict):
        return any(v == "auto" or has_auto(v) for v in node.values())
    return False


def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def trainer_args(config):
    """TrainingArguments a Trainer run of this config must have had to get past the Trainer's
    mismatch check: every value the config fixes, HF_TRAINER's for the rest."""
    args = dict(HF_TRAINER)
    mb, gas, tb = (config.get(k) for k in ("train_micro_batch_size_per_gpu",
                                           "gradient_accumulation_steps", "train_batch_size"))
    if isinstance(mb, int):
        args["per_device_train_batch_size"] = mb
    if isinstance(gas, int):
        args["gradient_accumulation_steps"] = gas
    if isinstance(tb, int) and not isinstance(mb, int):
        args["per_device_train_batch_size"] = max(1, tb // args["gradient_accumulation_steps"])
    if isinstance(tb, int) and isinstance(mb, int) and not isinstance(gas, int):
        args["gradient_accumulation_steps"] = max(1, tb // mb)
    if number(config.get("gradient_clipping")):
        args["max_grad_norm"] = config["gradient_clipping"]
    params = (config.get("optimizer") or {}).get("params") or {}
    scheduler = (config.get("scheduler") or {}).get("params") or {}
    if number(params.get("lr")):
        args["learning_rate"] = params["lr"]
    elif number(scheduler.get("warmup_max_lr")):
        args["learning_rate"] = scheduler["warmup_max_lr"]
    if isinstance(params.get("betas"), list) and len(params["betas"]) == 2:
        args["adam_beta1"], args["adam_beta2"] = params["betas"]
    for ds_key, hf_key in (("eps", "adam_epsilon"), ("weight_decay", "weight_decay")):
        if number(params.get(ds_key)):
            args[hf_key] = params[ds_key]
    for flag in ("fp16", "bf16"):
        if (config.get(flag) or {}).get("enabled") is True:
            args[flag] = True
    return args


def run(command):
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def classify(text):
    """The status of an outcome message: whose rule stopped it."""
    deepspeed_words = ("AssertionError", "ValueError", "TypeError", "validation error",
                       "Check batch related parameters", "not a supported DeepSpeed Optimizer",
                       "has been removed", "refuses this config", "accelerate refuses",
                       "bfloat16 and fp16 modes", "Maximum supported ZeRO stage",
                       "needs to be provided", "has to be greater than 0", "accelerate")
    if "diagnosis no_accumulation" in text:  # e.g. accelerate's GAS 1 for a config without one
        return "loses-accumulation"
    if "not implemented by the reference engine" in text or "is not implemented" in text:
        return "not-implemented"
    if any(word in text for word in deepspeed_words):
        return "refused-by-deepspeed"
    if "invalid JSON" in text or "invalid hjson" in text or "syntax error" in text:
        return "not-json"
    return "error"


def reason_of(text):
    """The part of a message that names the rule, without file paths (they differ per run)."""
    text = re.sub(r" \(at [^()]*\.json:[^()]*\)", "", text)  # "(at FILE:/pointer)" inside a message
    for marker in (".json:", ".json: "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return text.strip()[:200]


def mixed_precision(config):
    """fp16 or bf16 enabled (or left to the Trainer with "auto"): the model then runs in that
    dtype with float32 master weights, so the scenario cannot ask for float64."""
    return any(isinstance(config.get(key), dict) and config[key].get("enabled") in (True, "auto")
               for key in ("fp16", "bf16", "bfloat16"))


def written_by_new(trainrepro, name, workdir):
    """The scenario `trainrepro new --client-optimizer` writes for this config, as a user would
    make it: its "deepspeed" (the file read as DeepSpeed reads it, with hjson: 1e5 is the
    integer 100000) and "client_optimizer" sections are taken; the rest stays the corpus's own
    (MODEL, DATA, the golden)."""
    written = workdir / f"new-{name}"
    done = run([trainrepro, "new", "--ds-config", str(HERE / "configs" / name), "-o", str(written),
                "--client-optimizer", CLIENT_OPTIMIZER, "--intended-batch", "4", "--no-golden",
                "--force"])
    if done.returncode != 0:
        raise RuntimeError(f"{name}: trainrepro new --client-optimizer failed:\n"
                           f"{done.stdout}{done.stderr}")
    return json.loads(written.read_text())


def golden_and_run(trainrepro, path, scenario, workdir):
    """Writes the scenario, its golden, runs it: the run's output and its results."""
    path.write_text(json.dumps(scenario, indent=1))
    golden_dir = workdir / "golden"
    run([trainrepro, "golden", "--update", str(path), "--golden-dir", str(golden_dir)])
    results = workdir / "results"
    done = run([trainrepro, "run", str(path), "--golden-dir", str(golden_dir),
                "--results", str(results)])
    found = [json.loads(p.read_text()) for p in sorted(results.glob("*.json"))]
    for p in results.glob("*.json"):
        p.unlink()
    return done, found


def calibrating_too_short(result):
    return result["outcome"] == "error" and "not judged: all" in (result.get("found") or "")


def check_strict(trainrepro, name, config, workdir):
    scenario = {
        "name": name.removesuffix(".json"),
        "description": f"corpus config {name} at world size 1.",
        "model": MODEL, "data": DATA, "deepspeed": config,
        "dtype": "float32" if mixed_precision(config) else "float64",
        "golden": {"train_batch_size": 4, "steps": 2}, "expect": {"outcome": "pass"},
    }
    if has_auto(config):
        args = trainer_args(config)
        scenario["hf_trainer"] = args
        scenario["golden"]["train_batch_size"] = min(
            args["per_device_train_batch_size"] * args["gradient_accumulation_steps"],
            LARGEST_GOLDEN_BATCH)
    else:
        if "optimizer" not in config:  # the script passes its own to deepspeed.initialize
            written = written_by_new(trainrepro, name, workdir)
            scenario["deepspeed"] = written["deepspeed"]
            scenario["client_optimizer"] = written["client_optimizer"]
        resolved = run([trainrepro, "config", "resolve", str(HERE / "configs" / name)])
        if resolved.returncode == 0:
            batch = json.loads(resolved.stdout)["train_batch_size"]
            scenario["golden"]["train_batch_size"] = min(batch, LARGEST_GOLDEN_BATCH)
    path = workdir / name
    done, found = golden_and_run(trainrepro, path, scenario, workdir)
    if found and calibrating_too_short(found[0]):
        # fp16: every compared window went to loss-scale calibration. The message says how many
        # steps to run; a user sets them and runs again.
        steps = int(re.search(r"to at least (\d+)", found[0]["found"]).group(1))
        scenario["golden"]["steps"] = steps
        done, found = golden_and_run(trainrepro, path, scenario, workdir)
    if not found:
        return "error", reason_of(done.stdout + done.stderr)
    result = found[0]
    if result["outcome"] == "passed":
        training = result.get("training") or {}
        if training.get("precision") == "fp16":  # what calibration cost, even when nothing
            return "trains", (f"passed against its golden after fp16 loss-scale calibration: "
                              f"{training.get('calibration_skips', 0)} windows skipped, "
                              f"{training.get('applied_steps', 0)} applied updates compared")
        return "trains", "passed against its golden"
    text = result.get("found") or ""
    # Findings are read from the judgement's structure; refusals (below) still from their text.
    diagnosis = ((result.get("training") or {}).get("diagnosis") or {}).get("name")
    if diagnosis in ("no_accumulation", "effective_batch_differs"):
        return "loses-accumulation", reason_of(text)
    if diagnosis == "optimizer_stepped_at_initialization":
        return "trains-shifted-by-deepspeed", reason_of(text)
    status = classify(text)
    return (status if status != "error" else result["outcome"]), reason_of(text)


def check_lenient(trainrepro, name):
    done = run([trainrepro, "config", "resolve", str(HERE / "configs" / name)])
    if done.returncode == 0:
        return "resolves", "config resolve reads it as DeepSpeed's hjson does"
    text = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.stdout
    return classify(text), reason_of(text)


def main():
    trainrepro = sys.argv[1]
    write_expected = "--write-expected" in sys.argv
    sources = json.loads((HERE / "sources.json").read_text())
    expected_path = HERE / "expected.json"
    expected = {} if write_expected else json.loads(expected_path.read_text())
    outcomes = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        for entry in sources:
            name = entry["file"]
            text = (HERE / "configs" / name).read_text()
            try:
                config = json.loads(text)
                strict = isinstance(config, dict)
            except json.JSONDecodeError:
                strict = False
            status, reason = (check_strict(trainrepro, name, config, workdir) if strict
                              else check_lenient(trainrepro, name))
            outcomes[name] = {"status": status, "reason": reason}
            print(f"{status:22} {name}: {reason}")
    tally = {}
    for outcome in outcomes.values():
        tally[outcome["status"]] = tally.get(outcome["status"], 0) + 1
    print(f"{len(outcomes)} configs: " + ", ".join(f"{n} {s}" for s, n in sorted(tally.items())))
    if write_expected:
        expected_path.write_text(json.dumps(outcomes, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {expected_path}")
        return 0
    differences = 0
    for name, outcome in outcomes.items():
        want = expected.get(name)
        if want is None or want["status"] != outcome["status"] or want["reason"] != outcome["reason"]:
            differences += 1
            print(f"DIFFERS {name}: expected {want}, found {outcome}")
    for name in expected:
        if name not in outcomes:
            differences += 1
            print(f"MISSING {name}: in expected.json but not in sources.json")
    print("every config ends as expected.json says" if differences == 0
          else f"{differences} config(s) differ from expected.json")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
