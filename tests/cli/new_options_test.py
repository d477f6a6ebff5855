#!/usr/bin/env python3
"""`trainrepro new` for a script that passes its own optimizer, then `run`, as a user would:
a Megatron-style config without an "optimizer" block, the optimizer given with --client-optimizer
(compact spelling, then a JSON file) and the no-decay groups with --param-groups. Checks the
sections written, the config kept verbatim in its own key order, the option-named warning for a
substring that selects nothing, and that `run` passes against the golden `new` wrote.
Error cases (exit 2, nothing written) are plain CLI tests in cli_tests.cmake.

    new_options_test.py TRAINREPRO
"""
import json
import pathlib
import subprocess
import sys
import tempfile

CONFIG = pathlib.Path("tests/data/ds_configs/megatron_no_optimizer.json")
GROUPS_FILE = pathlib.Path("tests/data/new_options/no_decay_groups.json")


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    return done.returncode, done.stdout + done.stderr


def new_then_run(trainrepro, tmp, name, options, problems):
    scenario = tmp / f"{name}.json"
    golden = tmp / "golden"
    code, output = run([trainrepro, "new", "--ds-config", str(CONFIG), "-o", str(scenario),
                        "--golden-dir", str(golden)] + options)
    if code != 0 or not scenario.exists():
        problems.append(f"{name}: new exited {code}:\n{output}")
        return None, output
    code, ran = run([trainrepro, "run", str(scenario), "--golden-dir", str(golden)])
    if code != 0 or "passed" not in ran:
        problems.append(f"{name}: run exited {code}:\n{ran}")
    return json.loads(scenario.read_text()), output


def main():
    trainrepro = sys.argv[1]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        written, output = new_then_run(
            trainrepro, tmp, "compact",
            ["--client-optimizer", "AdamW lr=3e-4 weight_decay=0.1 betas=0.9,0.95",
             "--param-groups", "no_decay=bias,LayerNorm.weight"], problems)
        if written is not None:
            want = {"type": "AdamW", "params": {"lr": 0.0003, "weight_decay": 0.1,
                                                "betas": [0.9, 0.95]}}
            if written.get("client_optimizer") != want:
                problems.append(f"client_optimizer written as {written.get('client_optimizer')}")
            want = [{}, {"names_containing": ["bias", "LayerNorm.weight"], "weight_decay": 0.0}]
            if written.get("parameter_groups") != want:
                problems.append(f"parameter_groups written as {written.get('parameter_groups')}")
            pasted = json.loads(CONFIG.read_text())
            if list(written["deepspeed"]) != list(pasted) or written["deepspeed"] != pasted:
                problems.append("the config is not kept verbatim in its own key order: "
                                f"{list(written['deepspeed'])}")
        # The built-in MLP has no LayerNorm: legal Python that selects nothing, said by option.
        if ("warning: --param-groups: 'LayerNorm.weight': \"LayerNorm.weight\" is in no "
                "parameter's name") not in output:
            problems.append("no warning naming --param-groups for 'LayerNorm.weight':\n" + output)

        written, _ = new_then_run(
            trainrepro, tmp, "from-files",
            ["--client-optimizer", "Adam lr=1e-3 weight_decay=0.01",
             "--param-groups", str(GROUPS_FILE)], problems)
        if written is not None and written.get("parameter_groups") != json.loads(GROUPS_FILE.read_text()):
            problems.append(f"--param-groups FILE written as {written.get('parameter_groups')}")
    if problems:
        print("\n".join(problems))
        return 1
    print("new --client-optimizer / --param-groups, then run: as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
