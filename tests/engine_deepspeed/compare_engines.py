"""`trainrepro run --engine deepspeed` (or `--engine fsdp2`) gives the reference engine's verdicts.

Usage: compare_engines.py [--no-skips] [--exceptions FILE] TRAINREPRO
                          [--engine deepspeed==VERSION | --engine fsdp2] SCENARIO_OR_FOLDER...
Runs the scenarios on both engines (`--results` into a temporary folder) and compares each
scenario's outcome and diagnosis kinds. A scenario the DeepSpeed engine skips (with its reason)
is listed, not compared; every other must have the reference engine's outcome and diagnoses.
Exit 0 all agree, 1 a
disagreement, 3 a run failed to produce results, 77 no Python with torch and deepspeed (CTest
SKIP): TRAINREPRO_DEEPSPEED_PYTHON, else tests/deepspeed_oracle/deepspeed_python when the oracle's
DeepSpeed is installed, else python3. With --engine deepspeed==VERSION trainrepro itself installs
that release into its cache when missing (the first run pays for it), and nothing is skipped.
With --no-skips a scenario the DeepSpeed engine skips is a disagreement. With --exceptions FILE (a
JSON object: scenario name -> why its verdicts differ), a listed scenario that disagrees is printed
as an EXCEPTION with its why and does not fail the run; a listed one that agrees fails it (the
list must say what is true today). With --engine fsdp2 (no DeepSpeed needed: the Python whose
torch built trainrepro), a listed exception must also carry trainrepro's own explanation of the
difference in its result's diagnosis ("on FSDP2 …").
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SKIP = 77


def deepspeed_python():
    given = os.environ.get("TRAINREPRO_DEEPSPEED_PYTHON")
    if given:
        return given
    cache = pathlib.Path(os.environ.get("TRAINREPRO_CACHE") or pathlib.Path(
        os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "trainrepro")
    if (cache / "deepspeed-0.19.8" / ".trainrepro-complete").exists():
        return str(ROOT / "tests" / "deepspeed_oracle" / "deepspeed_python")
    return "python3"


def diagnoses(result):
    """The diagnosis kinds a result names ("...; memory: diagnosis host_memory_leak; ..."): the
    same outcome must come with the same diagnoses."""
    return sorted(set(re.findall(r"diagnosis ([a-z_]+)", result.get("found", ""))))


def run(trainrepro, paths, results, extra, env):
    started = time.time()
    completed = subprocess.run([trainrepro, "run", *paths, "--results", str(results), *extra],
                               cwd=ROOT, capture_output=True, text=True, env=env, timeout=3000)
    seconds = time.time() - started
    outcomes = {}
    for path in sorted(results.glob("*.json")):
        result = json.loads(path.read_text())
        outcomes[result["scenario"]["name"]] = result
    return completed, outcomes, seconds


def main():
    arguments = sys.argv[1:]
    no_skips = "--no-skips" in arguments
    arguments = [a for a in arguments if a != "--no-skips"]
    exceptions = {}
    if arguments[:1] == ["--exceptions"]:
        exceptions = json.loads(pathlib.Path(arguments[1]).read_text())
        arguments = arguments[2:]
    trainrepro, paths = arguments[0], arguments[1:]
    engine = "deepspeed"
    if paths[:1] == ["--engine"]:
        engine, paths = paths[1], paths[2:]
    python = deepspeed_python()
    env = dict(os.environ, TRAINREPRO_DEEPSPEED_PYTHON=python)
    probe = subprocess.run([python, "-c", "import torch, deepspeed"], capture_output=True,
                           text=True, env=env) if engine == "deepspeed" else None
    engine_name = engine.split("==")[0]  # as results name it: "deepspeed 0.19.8 (…)", "fsdp2 (…)"
    if probe is not None and probe.returncode != 0:
        print(f"SKIP: {python} cannot import torch and deepspeed "
              f"(install with tests/deepspeed_oracle/install_deepspeed.sh, or set "
              f"TRAINREPRO_DEEPSPEED_PYTHON): {probe.stderr.strip().splitlines()[-1:]}")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="trainrepro-engines-") as folder:
        folder = pathlib.Path(folder)
        reference_run, reference, reference_seconds = run(
            trainrepro, paths, folder / "reference", [], env)
        deepspeed_run, deepspeed, deepspeed_seconds = run(
            trainrepro, paths, folder / "deepspeed", ["--engine", engine], env)
    if not reference or not deepspeed:
        print(f"no results: reference exit {reference_run.returncode}, deepspeed exit "
              f"{deepspeed_run.returncode}\n{deepspeed_run.stdout[-3000:]}{deepspeed_run.stderr[-3000:]}")
        return 3
    agree, disagree, skipped, excepted = [], [], [], []
    for name, ours in sorted(reference.items()):
        theirs = deepspeed.get(name)
        if theirs is None:
            disagree.append(f"{name}: no result from --engine {engine}")
            continue
        if theirs["outcome"] == "skipped" and ours["outcome"] != "skipped":
            (disagree if no_skips else skipped).append(f"{name}: {theirs.get('found', '')}")
            continue
        line = f"{name}: reference {ours['outcome']}, {engine_name} {theirs['outcome']}"
        if not theirs.get("engine", "").startswith(engine_name + " "):
            disagree.append(f"{line}: the result names the engine {theirs.get('engine')!r}")
        elif theirs["outcome"] == ours["outcome"] and diagnoses(theirs) != diagnoses(ours):
            disagree.append(f"{line}, but the diagnoses differ: reference {diagnoses(ours)}, "
                            f"{engine_name} {diagnoses(theirs)}: {theirs.get('found', '')[:600]}")
        elif theirs["outcome"] == ours["outcome"]:
            agree.append(line + (f" ({', '.join(diagnoses(ours))})" if diagnoses(ours) else ""))
            if name in exceptions:
                disagree.append(f"{name}: listed in the exceptions ({exceptions[name]}) but the "
                                f"engines agree now: remove it from the list")
        elif name in exceptions and engine_name == "fsdp2" and \
                not (theirs.get("diagnosis") or "").startswith("on FSDP2"):
            disagree.append(f"{line}: listed, but the result does not explain the difference "
                            f"(diagnosis {theirs.get('diagnosis', '')!r})")
        elif name in exceptions:
            excepted.append(f"{line}: {exceptions[name]}")
        else:
            disagree.append(f"{line}: {theirs.get('found', '')[:600]}")
    engines = {result.get("engine") for result in deepspeed.values()}
    reference_engines = {result.get("engine") for result in reference.values()}
    for line in agree:
        print("AGREE     " + line)
    for line in skipped:
        print("SKIPPED   " + line)
    for line in excepted:
        print("EXCEPTION " + line)
    for line in disagree:
        print("DISAGREE  " + line)
    print(f"{len(agree)} agree, {len(disagree)} disagree, {len(excepted)} listed exceptions, "
          f"{len(skipped)} skipped on the {engine_name} "
          f"engine ({', '.join(sorted(e for e in engines if e))}); reference {reference_seconds:.1f} s, "
          f"{engine_name} {deepspeed_seconds:.1f} s")
    if reference_engines != {"reference"}:
        print(f"the reference run names the engines {sorted(map(str, reference_engines))}")
        return 1
    return 1 if disagree or not agree else 0


if __name__ == "__main__":
    sys.exit(main())
