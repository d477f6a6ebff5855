"""`run --engine deepspeed==VERSION` and `bisect` on what cannot be installed or searched: each a
clear message, the documented exit code, nothing written and nothing left in the cache. Hermetic: the release list
comes from a file:// fixture (TRAINREPRO_PYPI_JSON) and the cache is a temporary folder, so it
runs in the normal suite without network or DeepSpeed.

Usage: check_release_errors.py TRAINREPRO
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCENARIO = "scenarios/accumulation/gas-missing.json"

# What PyPI's JSON API answers, cut down: three releases with files, one yanked, one without files.
INDEX = {"releases": {
    "0.18.4": [{"filename": "deepspeed-0.18.4.tar.gz", "yanked": False}],
    "0.18.5": [{"filename": "deepspeed-0.18.5.tar.gz", "yanked": True}],
    "0.18.6": [{"filename": "deepspeed-0.18.6.tar.gz", "yanked": False}],
    "0.18.7": [],
    "0.19.0": [{"filename": "deepspeed-0.19.0.tar.gz", "yanked": False}],
    "0.19.0rc1": [{"filename": "deepspeed-0.19.0rc1.tar.gz", "yanked": False}],
}}


def main():
    trainrepro = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="trainrepro-release-errors-") as folder:
        folder = pathlib.Path(folder)
        index = folder / "deepspeed.json"
        index.write_text(json.dumps(INDEX))
        def run(engine):
            return ["run", SCENARIO, "--engine", engine]

        def bisect(good, bad, engine="deepspeed"):
            return ["bisect", SCENARIO, "--engine", engine, "--good", good, "--bad", bad]

        cases = [  # (name, trainrepro's arguments, extra environment, exit code, text expected)
            ("missing release", run("deepspeed==0.18.7"), {}, 2,
             "PyPI has no deepspeed 0.18.7; the nearest releases: 0.18.4, 0.18.6, 0.19.0"),
            ("yanked release", run("deepspeed==0.18.5"), {}, 2,
             "deepspeed 0.18.5 was yanked from PyPI; the nearest releases: 0.18.4, 0.18.6, 0.19.0"),
            ("offline", run("deepspeed==0.18.6"), {"TRAINREPRO_OFFLINE": "1"}, 3,
             "TRAINREPRO_OFFLINE=1 forbids installing it"),
            ("no network", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": "http://127.0.0.1:9/"}, 3,
             "cannot reach the package index http://127.0.0.1:9/"),
            ("misspelt", run("deepspeed=0.18.6"), {}, 2,
             "--engine: expected reference, deepspeed, deepspeed==VERSION"),
            ("not a release", run("deepspeed==0.18"), {}, 2,
             "--engine: expected reference, deepspeed, deepspeed==VERSION"),
            ("bisect missing release", bisect("0.18.4", "0.18.7"), {}, 2,
             "bisect: PyPI has no deepspeed 0.18.7"),
            ("bisect yanked release", bisect("0.18.5", "0.19.0"), {}, 2,
             "bisect: deepspeed 0.18.5 was yanked from PyPI"),
            ("bisect same release", bisect("0.18.6", "0.18.6"), {}, 2,
             "bisect: --good and --bad are the same release, 0.18.6"),
            ("bisect reference engine", bisect("0.18.4", "0.19.0", "reference"), {}, 2,
             "bisect: --engine must be deepspeed"),
            ("bisect no network", bisect("0.18.4", "0.19.0"),
             {"TRAINREPRO_PYPI_JSON": "http://127.0.0.1:9/"}, 3,
             "cannot reach the package index http://127.0.0.1:9/"),
            # The release list is read, the first probe cannot install: the search stops there.
            ("bisect offline", bisect("0.18.4", "0.19.0"), {"TRAINREPRO_OFFLINE": "1"}, 3,
             "bisect stopped: deepspeed 0.18.4 gave no outcome to compare"),
        ]
        for name, arguments, extra, code, text in cases:
            cache = folder / name.replace(" ", "-")
            results = folder / (name.replace(" ", "-") + "-results")
            env = {k: v for k, v in os.environ.items() if k != "TRAINREPRO_OFFLINE"}
            env.update(TRAINREPRO_CACHE=str(cache), TRAINREPRO_PYPI_JSON=index.as_uri())
            env.update(extra)
            if arguments[0] == "run":
                arguments = arguments + ["--results", str(results)]
            completed = subprocess.run([trainrepro] + arguments, cwd=ROOT, env=env,
                                       capture_output=True, text=True, timeout=300)
            output = completed.stdout + completed.stderr
            if completed.returncode != code:
                failures.append(f"{name}: exit {completed.returncode}, expected {code}:\n{output}")
            elif text not in output:
                failures.append(f"{name}: the output lacks {text!r}:\n{output}")
            elif results.exists() and any(results.iterdir()):
                failures.append(f"{name}: results were written: {sorted(results.iterdir())}")
            elif cache.exists() and any(p.name.endswith("complete") for p in cache.rglob("*")):
                failures.append(f"{name}: a stamp was left in {cache}")
            else:
                print(f"ok  {name}: exit {code}")
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
