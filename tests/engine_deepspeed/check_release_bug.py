"""A catalogued DeepSpeed implementation bug (scenario key "deepspeed_releases") reproduces on a
release that has it and passes on one that does not, and the reference engine passes it.

Usage: check_release_bug.py TRAINREPRO SCENARIO AFFECTED FIXED
Runs SCENARIO on the reference engine (must pass), then with `--engine deepspeed` on AFFECTED
(must be `reproduced`, the console naming reproduces_on) and on FIXED (must be `passed`, naming
passes_on), each as `--engine deepspeed==VERSION`, which installs a release missing from
trainrepro's cache on first use. Exit 0 as expected, 1 not, 3 a run gave no result, 77 (CTest
SKIP) a release is not installed and TRAINREPRO_OFFLINE=1 forbids installing it.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SKIP = 77


def cache():
    return pathlib.Path(os.environ.get("TRAINREPRO_CACHE") or pathlib.Path(
        os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "trainrepro")


def installed(release):
    return (cache() / f"deepspeed-{release}" / ".trainrepro-complete").exists()


def run(trainrepro, scenario, extra, env):
    """The scenario's results JSON, the console output and the seconds it took."""
    with tempfile.TemporaryDirectory(prefix="trainrepro-release-bug-") as folder:
        started = time.time()
        completed = subprocess.run([trainrepro, "run", scenario, "--results", folder, *extra],
                                   cwd=ROOT, capture_output=True, text=True, env=env,
                                   timeout=1800)
        seconds = time.time() - started
        results = sorted(pathlib.Path(folder).glob("*.json"))
        result = json.loads(results[0].read_text()) if results else None
    return result, completed.stdout + completed.stderr, seconds


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    trainrepro, scenario, affected, fixed = sys.argv[1:]
    missing = [r for r in (affected, fixed) if not installed(r)]
    if missing and os.environ.get("TRAINREPRO_OFFLINE", "").lower() in ("1", "true", "yes"):
        print(f"SKIP: DeepSpeed {', '.join(missing)} not installed in {cache()}, and "
              "TRAINREPRO_OFFLINE=1 forbids installing it")
        return SKIP
    failures = []
    reference, output, seconds = run(trainrepro, scenario, [], dict(os.environ))
    if reference is None:
        print(f"FAIL: the reference engine wrote no result:\n{output}")
        return 3
    print(f"reference engine: {reference['outcome']} in {seconds:.1f} s: {reference['found']}")
    if reference["outcome"] != "passed":
        failures.append(f"the reference engine says {reference['outcome']}, not passed")
    for release, wanted, listed in ((affected, "reproduced", "reproduces_on"),
                                    (fixed, "passed", "passes_on")):
        result, output, seconds = run(trainrepro, scenario,
                                      ["--engine", f"deepspeed=={release}"], dict(os.environ))
        if result is None:
            print(f"FAIL: DeepSpeed {release} wrote no result:\n{output}")
            return 3
        said = result.get("release_expectation") or ""
        print(f"DeepSpeed {release}: {result['outcome']} in {seconds:.1f} s "
              f"(engine {result['engine']}): {result['found']}\n    release: {said}")
        if result["outcome"] != wanted:
            failures.append(f"DeepSpeed {release}: {result['outcome']}, not {wanted}:\n{output}")
        if f"DeepSpeed {release} is in /deepspeed_releases/{listed}" not in said:
            failures.append(f"DeepSpeed {release}: the result does not say it is in {listed}: "
                            f"{said!r}")
        if f"release:   DeepSpeed {release} is in /deepspeed_releases/{listed}" not in output:
            failures.append(f"DeepSpeed {release}: the console has no release line:\n{output}")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
