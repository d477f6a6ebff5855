"""`trainrepro run`'s worker sets give the verdicts fresh worker ranks give (issue 53).

Usage: check_served_verdicts.py TRAINREPRO [--engine ENGINE] ORDER [ORDER...]
Each ORDER is one served run: scenario files or folders joined by commas, trained in that order
by one set of ranks per world size (`run --engine ENGINE --serve-workers`; ENGINE is
deepspeed==0.19.8 unless given, or fsdp2). Every
scenario named in any ORDER is also run once one-shot (fresh ranks each: `--fresh-workers`).
The served runs pass `--serve-workers`, the default, which stays accepted. For every scenario
and every run, the outcome, whether memory was judged, the memory diagnoses and the diagnosis
kinds the result names must equal the one-shot run's: a leak seen by the next scenario of a set,
or a leak hidden by it, is a difference. And no set may end early (trainrepro's last lines say
"a set ended early" when a scenario left something behind): a set retired after each scenario
would give every scenario fresh ranks and prove nothing about isolation. Prints each scenario's line and the host heap's
growth (bytes/step) one-shot and served, so a drift shows before it flips a verdict.
Exit 0 all equal, 1 a difference, 3 a run gave no results, 77 (CTest SKIP) when ENGINE is
deepspeed==0.19.8 and it is not in trainrepro's cache (TRAINREPRO_CACHE, else
~/.cache/trainrepro).
"""
import os
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compare_engines  # noqa: E402 (beside this file)

SKIP = 77
DEFAULT_ENGINE = "deepspeed==0.19.8"


def release_installed():
    cache = pathlib.Path(os.environ.get("TRAINREPRO_CACHE") or pathlib.Path(
        os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "trainrepro")
    return (cache / "deepspeed-0.19.8" / ".trainrepro-complete").exists()


def verdict(result):
    """What must not change when the ranks are kept: outcome, memory judged and diagnosed,
    and the diagnosis kinds the result's text names."""
    memory = result.get("memory") or {}
    return {"outcome": result["outcome"], "memory.judged": memory.get("judged"),
            "memory.diagnoses": sorted(memory.get("diagnoses") or []),
            "diagnoses": sorted(set(re.findall(r"diagnosis ([a-z_]+)", result.get("found", ""))))}


def host_growth(result):
    growth = ((result.get("memory") or {}).get("host") or {}).get("bytes_per_step")
    return "-" if growth is None else f"{growth:.0f}"


def run(trainrepro, engine, paths, results, extra):
    """(the finished run, {scenario name: result}, seconds) of one run on ENGINE."""
    return compare_engines.run(trainrepro, paths, results, ["--engine", engine, *extra],
                               os.environ)


def main():
    arguments = sys.argv[1:]
    engine = DEFAULT_ENGINE
    if arguments[1:2] == ["--engine"]:
        engine = arguments[2] if len(arguments) > 2 else ""
        arguments = arguments[:1] + arguments[3:]
    if len(arguments) < 2 or not engine:
        print(__doc__)
        return 2
    if engine == DEFAULT_ENGINE and not release_installed():
        print(f"SKIP: DeepSpeed 0.19.8 is not in trainrepro's cache (run "
              f"`trainrepro run --engine {engine} SCENARIO` once to install it)")
        return SKIP
    trainrepro, orders = arguments[0], [order.split(",") for order in arguments[1:]]
    every = list(dict.fromkeys(path for order in orders for path in order))
    differences = 0
    with tempfile.TemporaryDirectory(prefix="trainrepro-served-") as folder:
        folder = pathlib.Path(folder)
        completed, alone, seconds = run(trainrepro, engine, every, folder / "one-shot",
                                        ["--fresh-workers"])
        print(f"one-shot: {len(alone)} results in {seconds:.1f} s (exit {completed.returncode})")
        if not alone:
            print(completed.stdout[-3000:] + completed.stderr[-3000:])
            return 3
        for number, order in enumerate(orders, 1):
            completed, served, seconds = run(trainrepro, engine, order, folder / f"served-{number}",
                                             ["--serve-workers"])
            print(f"served run {number} ({' then '.join(pathlib.Path(p).stem for p in order)}): "
                  f"{len(served)} results in {seconds:.1f} s (exit {completed.returncode})")
            if not served:
                print(completed.stdout[-3000:] + completed.stderr[-3000:])
                return 3
            for line in completed.stderr.splitlines():
                if "a set ended early" in line:
                    print(f"  DIFFERENT: the scenarios did not share their set: {line[:600]}")
                    differences += 1
            for name, result in served.items():
                expected = alone.get(name)
                if expected is None:
                    print(f"  DIFFERENT {name}: no one-shot result")
                    differences += 1
                    continue
                same = verdict(result) == verdict(expected)
                differences += not same
                print(f"  {'same     ' if same else 'DIFFERENT'} {name}: {verdict(result)}"
                      f"{'' if same else f' (one-shot {verdict(expected)})'}; host heap "
                      f"{host_growth(expected)} B/step one-shot, {host_growth(result)} served")
                if not same:
                    print(f"    served: {result.get('found', '')[:600]}")
            missing = set(alone) & {pathlib.Path(p).stem for p in order} - set(served)
            for name in sorted(missing):
                print(f"  DIFFERENT {name}: no served result")
                differences += 1
    print(f"{differences} difference(s)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
