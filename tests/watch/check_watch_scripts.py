"""`trainrepro watch` on real training scripts (issue 35): each script of scripts/ that has a loop
bug gives the diagnosis cases.json names, and its fixed twin passes, at every rank count asked;
and the bad inputs end as documented.

Usage: check_watch_scripts.py TRAINREPRO [--ranks 1,2] [--only SCRIPT...] [--bad-inputs] [--save]
--save: a bug script and its twin watched with --save-scenario at 2 ranks, each saved scenario
then run by `trainrepro run` on the reference engine (the bug reproduced, the twin passed), and a
memory leak refused with why.
The scripts run under `PYTHON -m torch.distributed.run --standalone --nproc_per_node N`, PYTHON
being TRAINREPRO_DEEPSPEED_PYTHON, else tests/deepspeed_oracle/deepspeed_python when DeepSpeed
0.19.8 is in trainrepro's cache (installed by `trainrepro run --engine deepspeed==0.19.8`), else
exit 77 (CTest SKIP). Exit 0 when every case held, 1 otherwise (each failure printed with the
watch's output).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

# torchrun (torch.distributed.elastic) leaves a torchelastic_* folder in $TMPDIR after every
# launch: the launches here get a $TMPDIR of this script's own, removed when it ends.
SCRATCH = tempfile.TemporaryDirectory(prefix="trainrepro-torchrun-")
os.environ["TMPDIR"] = SCRATCH.name

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCRIPTS = HERE / "scripts"
SKIP = 77


def deepspeed_python():
    """compare_engines.py's choice, None where it falls back to a python3 that may lack
    DeepSpeed (this check then skips)."""
    sys.path.insert(0, str(ROOT / "tests" / "engine_deepspeed"))
    from compare_engines import deepspeed_python as chosen
    python = chosen()
    return None if python == "python3" and not os.environ.get("TRAINREPRO_DEEPSPEED_PYTHON") \
        else python


# How a case's script is launched: torchrun's module, or DeepSpeed's own launcher (which passes
# --local_rank to the script; on the CPU accelerator --num_gpus counts processes).
LAUNCHERS = {
    "torchrun": lambda ranks: ["-m", "torch.distributed.run", "--standalone",
                               "--nproc_per_node", str(ranks)],
    "deepspeed": lambda ranks: ["-m", "deepspeed.launcher.runner", "--num_gpus", str(ranks)],
}


def watch(trainrepro, python, script, ranks, args=(), watch_args=(), launcher="torchrun"):
    """Runs one script under watch: (exit code, output, results JSON or None, seconds)."""
    with tempfile.TemporaryDirectory() as folder:
        results = os.path.join(folder, "watch.json")
        junit = os.path.join(folder, "watch.xml")
        page = os.path.join(folder, "watch.html")
        command = [trainrepro, "watch", *watch_args, "--results", results, "--junit", junit,
                   "--html", page, "--",
                   python, *LAUNCHERS[launcher](ranks), str(SCRIPTS / script), *args]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, cwd=folder,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        seconds = time.monotonic() - started
        # The results file is a scenario result; what only a watch knows is its "watch" object.
        verdict = json.load(open(results))["watch"] if os.path.exists(results) else None
        output = done.stdout + done.stderr
        # The JUnit file is valid against the schema `run --junit` is (when xmllint is here).
        if verdict is not None and shutil.which("xmllint"):
            schema = subprocess.run(["xmllint", "--noout", "--schema",
                                     str(ROOT / "tests" / "report" / "junit-10.xsd"), junit],
                                    capture_output=True, text=True)
            if schema.returncode != 0:
                verdict = None
                output += "\n--junit: not valid against junit-10.xsd:\n" + schema.stderr
        # The page names what the results file does.
        if verdict is not None and verdict["diagnosis"] and (
                not os.path.exists(page) or
                f"Diagnosis: {verdict['diagnosis']}" not in open(page).read()):
            verdict = None
            output += "\n--html: the page does not name the diagnosis"
        if verdict is not None and verdict.get("golden_self_check_failed") and (
                "Golden self-check" not in open(page).read()):
            verdict = None
            output += "\n--html: the page does not say the golden failed its self-check"
        return done.returncode, output, verdict, seconds


def failure_text(label, output):
    """What a failure shows: the lines that say how a process ended (a rank's abort or
    traceback sits far above the watch's own tail, which is cut), then the tail; the whole output
    is kept in a file that outlives the test's temporary folder, named here."""
    kept = pathlib.Path(tempfile.mkdtemp(prefix="trainrepro-watch-failure-")) / "output.txt"
    kept.write_text(output)
    endings = [line for line in output.splitlines()
               if re.search(r"Fatal|Abort|SIG[A-Z]+|terminate called|Segmentation|Traceback|"
                            r"Error:|exitcode|core dumped", line)]
    return (f"(the whole output of {label}: {kept})\n"
            + ("how processes ended:\n" + "\n".join(endings[-40:]) + "\n" if endings else "")
            + "the tail:\n" + output[-3000:])


def hf_trainer_python(needs=("hf-trainer-1.15.0",)):
    """The real Trainer stack's Python, or None when its cache (and each other folder `needs`
    names: torchvision's, hf_trainer_env.sh) is not installed."""
    cache = pathlib.Path(os.environ.get("TRAINREPRO_CACHE") or pathlib.Path(
        os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "trainrepro")
    if all((cache / folder / ".trainrepro-complete").exists() for folder in needs):
        return str(HERE / "hf_trainer_python")
    return None


# A case's "python": the folders of trainrepro's cache its script needs.
CASE_PYTHONS = {"hf-trainer": ("hf-trainer-1.15.0",),
                "torchvision": ("hf-trainer-1.15.0", "torchvision-0.26.0")}


def placeholders(values, ranks):
    """WORLD*N: N times the rank count; SCRIPTS/: the scripts' folder (a config file there)."""
    return [str(ranks * int(v.split("*")[1])) if v.startswith("WORLD*") else
            v.replace("SCRIPTS/", f"{SCRIPTS}/") for v in values]


def golden_self_check_said(verdict, output, expected):
    """What is wrong with the float64 golden's self-check as the watch reported it ("" when
    right): expected "failed" (the results, the console and the page say so, with the
    micro-batch, both losses and the likely cause, and name the float32 golden that judged),
    else passed wherever the gradients were judged."""
    if not verdict or not verdict["judged"]:
        return ""
    failed = verdict.get("golden_self_check_failed", "")
    if expected != "failed":
        return f"the float64 golden failed its self-check: {failed}" if failed else ""
    wanted = ("micro-batch", "in float64, but the loop computed", "Likely cause",
              "scaled_dot_product_attention")
    if not failed or any(w not in failed for w in wanted):
        return f"expected the float64 golden's self-check to fail with why, found {failed!r}"
    if not verdict.get("golden", "").startswith("float32") or \
            any(step.get("golden_dtype") != "float32" for step in verdict["steps"]):
        return f"expected the float32 golden to judge, found {verdict['golden']!r}"
    if "golden self-check: " not in output or "judged by the golden in float32" not in output:
        return "the console does not say the self-check failed and which golden judged"
    return ""


def check_case(trainrepro, python, case, ranks, failures):
    args = placeholders(case.get("args", []), ranks)
    watch_args = placeholders(case.get("watch", []), ranks)
    runs = [(case["script"], args, watch_args,
             None if case["expect"] == "passed" else case["expect"])]
    if "twin" in case:  # a case that is not judged has none
        runs.append((case["twin"], placeholders(case.get("twin_args", case.get("args", [])),
                                                ranks),
                     placeholders(case.get("twin_watch", case.get("watch", [])), ranks), None))
    for script, script_args, options, expected in runs:
        code, output, verdict, seconds = watch(trainrepro, python, script, ranks, script_args,
                                               options, case.get("launcher", "torchrun"))
        found = verdict and verdict["diagnosis"]
        memory = verdict["memory"]["diagnoses"] if verdict else []
        if expected is None:
            ok = code == 0 and verdict and verdict["outcome"] == "passed"
            said = "passed" if ok else f"exit {code}, {found or 'no diagnosis'}"
        elif expected == "not-judged":  # said so with why (case["why"]), never a diagnosis
            ok = code == 3 and verdict and verdict["outcome"] == "not-judged" and \
                case["why"] in verdict["not_judged_reason"]
            said = f"exit {code}, " + ((verdict["not_judged_reason"] or found or "no diagnosis")
                                       if verdict else "no results")
        else:
            ok = code == 1 and (found == expected or expected in memory)
            said = f"{found}" + (f" (memory: {', '.join(memory)})" if memory else "")
        if case.get("finding") and script_args == args and ok and \
                not any(case["finding"] in f for f in verdict["findings"]):
            ok = False
            said += f"; no finding says {case['finding']!r}: {verdict['findings']}"
        golden_said = golden_self_check_said(verdict, output, case.get("golden_self_check"))
        if golden_said:
            ok = False
            said += f"; {golden_said}"
        label = f"{script} {' '.join(script_args)}".strip()
        if case.get("launcher", "torchrun") != "torchrun":
            label += f" (launched by {case['launcher']})"
        print(f"{'ok  ' if ok else 'FAIL'} {ranks} rank{'s' if ranks > 1 else ''}  {label}: "
              f"{said} ({seconds:.0f} s)", flush=True)
        if not ok:
            failures.append(f"{label} at {ranks} ranks: expected "
                            f"{expected or 'a pass'}"
                            + (f" ({case['why']})" if expected == "not-judged" else "")
                            + f"; the watch said:\n"
                            f"{failure_text(label, output)}")


def check_bad_inputs(trainrepro, python, failures):
    """The documented endings of scripts that cannot be watched or judged, and that nothing is
    written beside the script."""
    before = {p: p.stat().st_mtime_ns for p in SCRIPTS.rglob("*")}
    tutorial = ("--deepspeed", "--deepspeed_config", str(SCRIPTS / "deepspeed-tutorial.json"))
    cases = [
        ("never-initializes.py", (), 3, "no DeepSpeed engine was created"),
        ("raises-after-two-steps.py", (), 3, "ValueError: the data loader ran out of shards"),
        ("killed-after-one-step.py", (), 3,
         "DeepSpeed engines were created (rank 0), but no rank wrote its recording"),
        # No float64 copy of a model that casts inside its forward: said under --golden float64;
        # the default golden is the run's own function, casts and all, and judges it.
        ("casts-to-float32.py", (), 3, "the golden could not be computed", ("--golden", "float64")),
        ("casts-to-float32.py", (), 0, "judged by the golden in float32"),
        ("deepspeed-tutorial.py", ("--forward-method",) + tutorial, 3,
         "never a forward of the engine or of its module"),
        # 30 samples per step is not 4 x 4 x 1: DeepSpeed's batch assertion, inside initialize
        ("deepspeed-tutorial.py", ("--deepspeed", "--deepspeed_config",
                                   str(SCRIPTS / "deepspeed-tutorial-bad-batch.json")), 3,
         "deepspeed.initialize raised on rank 0: AssertionError: Check batch related parameters"),
    ]
    for script, args, code_expected, text, *watch_args in cases:
        code, output, verdict, seconds = watch(trainrepro, python, script, 1, args,
                                               watch_args[0] if watch_args else ())
        ok = code == code_expected and text in output and verdict is not None
        if script == "raises-after-two-steps.py":  # what was recorded is still judged
            ok = ok and verdict["outcome"] == "error" and len(verdict["steps"]) == 2 and all(
                s["gradients_match"] for s in verdict["steps"])
        if script == "killed-after-one-step.py":  # which rank, which signal
            ok = ok and re.search(r"rank 0 \(pid [0-9]+\) was killed by SIGKILL", output)
        print(f"{'ok  ' if ok else 'FAIL'} bad input {script}: exit {code} ({seconds:.0f} s)",
              flush=True)
        if not ok:
            failures.append(f"{script}: expected exit {code_expected} and {text!r}; "
                            f"got exit {code}:\n{failure_text(script, output)}")
    code = subprocess.run([trainrepro, "watch"], capture_output=True, text=True).returncode
    if code != 2:
        failures.append(f"watch without a command: exit {code}, expected 2")
    after = {p: p.stat().st_mtime_ns for p in SCRIPTS.rglob("*")}
    if after != before:
        failures.append("the watched scripts' folder changed: " + ", ".join(
            str(p) for p in set(after) ^ set(before) or
            [p for p in after if after[p] != before.get(p)]))


def check_saved_scenarios(trainrepro, python, failures):
    for script, outcome in (("loss-scaled-twice.py", "reproduced"),
                            ("no-sync-off-by-one.py", "reproduced"),  # loop.gradient_sync
                            ("accumulation-correct.py", "passed")):
        with tempfile.TemporaryDirectory() as folder:
            saved = os.path.join(folder, "saved.json")
            code, output, _, seconds = watch(
                trainrepro, python, script, 2, (),
                ("--steps", "3", "--memory-steps", "0", "--save-scenario", saved,
                 "--golden-dir", os.path.join(folder, "golden")))
            run = subprocess.run([trainrepro, "run", saved, "--golden-dir",
                                  os.path.join(folder, "golden")], capture_output=True, text=True,
                                 env=dict(os.environ, OMP_NUM_THREADS="1"))
            ok = os.path.exists(saved) and run.returncode == 0 and f"1 {outcome}" in run.stdout
            print(f"{'ok  ' if ok else 'FAIL'} saved {script} as a scenario: {outcome} "
                  f"({seconds:.0f} s)", flush=True)
            if not ok:
                failures.append(f"--save-scenario of {script}: watch exit {code}\n"
                                f"{output[-2000:]}\nrun exit {run.returncode}:\n"
                                f"{run.stdout[-2000:]}{run.stderr[-1000:]}")
    with tempfile.TemporaryDirectory() as folder:
        saved = os.path.join(folder, "saved.json")
        code, output, _, _ = watch(trainrepro, python, "keeps-loss-with-graph.py", 1,
                                   ("--steps", "24", "--gas", "2"),
                                   ("--memory-steps", "24", "--save-scenario", saved))
        ok = code == 2 and "not saved" in output and not os.path.exists(saved)
        print(f"{'ok  ' if ok else 'FAIL'} a leak is not saved, with why", flush=True)
        if not ok:
            failures.append(f"--save-scenario of a leak: exit {code}\n{output[-2000:]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trainrepro")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--bad-inputs", action="store_true")
    parser.add_argument("--save", action="store_true")
    options = parser.parse_args()
    options.trainrepro = os.path.abspath(options.trainrepro)  # the watches run in temporary folders
    python = deepspeed_python()
    if python is None:
        print("SKIP: no Python with DeepSpeed 0.19.8 (set TRAINREPRO_DEEPSPEED_PYTHON, or run "
              "`trainrepro run --engine deepspeed==0.19.8` once to install it)")
        return SKIP
    cases = json.load(open(HERE / "cases.json"))["cases"]
    if options.only is not None:
        cases = [c for c in cases if c["script"] in options.only]
    failures = []
    for ranks in (int(r) for r in options.ranks.split(",")):
        for case in cases:
            if ranks not in case.get("ranks", [ranks]):
                continue
            case_python = python
            if case.get("python"):
                case_python = hf_trainer_python(CASE_PYTHONS[case["python"]])
                if case_python is None:
                    print(f"skip {case['script']}: the Trainer stack or torchvision is not "
                          "installed (tests/deepspeed_oracle/install_hf_trainer.sh 1.15.0)")
                    continue
            check_case(options.trainrepro, case_python, case, ranks, failures)
    if options.bad_inputs:
        check_bad_inputs(options.trainrepro, python, failures)
    if options.save:
        check_saved_scenarios(options.trainrepro, python, failures)
    for failure in failures:
        print("\n" + failure)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
