"""`run --engine deepspeed==VERSION` and `bisect` on what cannot be installed or searched: each a
clear message, the documented exit code, nothing written and nothing left in the cache. Hermetic: the release list
comes from a file:// fixture (TRAINREPRO_PYPI_JSON) and the cache is a temporary folder, so it
runs in the normal suite without network or DeepSpeed. Bad input in the environment too: a
release list that is a device, a FIFO, a list or too big for bisect's output; versions in
Unicode digits or 10,000 characters long; TRAINREPRO_OFFLINE spelt true; a mirror's password.

Usage: check_release_errors.py TRAINREPRO
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import urllib.request

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
    # Python's \d reads Arabic-Indic digits as digits; a release folder must not be named so.
    "\u0660.\u0661\u0669.\u0668": [{"filename": "deepspeed-x.tar.gz", "yanked": False}],
}}
# 300 releases (PyPI lists 133 in 2026): more than a launcher's output tail holds on one line.
MANY = {"releases": {f"0.{minor}.0": [{"filename": "x.tar.gz", "yanked": False}]
                     for minor in range(1, 301)}}
LONG_VERSION = "0." + "1" * 10000 + ".8"


def main():
    trainrepro = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="trainrepro-release-errors-") as folder:
        folder = pathlib.Path(folder)
        index = folder / "deepspeed.json"
        index.write_text(json.dumps(INDEX))
        def fixture(name, document):
            path = folder / name
            path.write_text(document if isinstance(document, str) else json.dumps(document))
            return path.as_uri()
        many = fixture("many.json", MANY)
        as_list = fixture("list.json", [INDEX])
        files_as_string = fixture("files-string.json",
                                  {"releases": {"0.18.4": "deepspeed-0.18.4.tar.gz"}})
        fifo = folder / "fifo.json"
        os.mkfifo(fifo)
        # pip gives up at once on a refused connection: the install fails with pip's own words.
        no_pip = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0",
                  "PIP_TIMEOUT": "2"}
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
             "TRAINREPRO_OFFLINE forbids installing it"),
            # true and yes are on, as scripts/env.sh reads them; the index would not answer.
            ("offline spelt true", run("deepspeed==0.18.6"),
             {"TRAINREPRO_OFFLINE": "true", "TRAINREPRO_PYPI_JSON": "http://127.0.0.1:9/"}, 3,
             "TRAINREPRO_OFFLINE forbids installing it"),
            ("offline spelt yes", run("deepspeed==0.18.6"),
             {"TRAINREPRO_OFFLINE": "YES", "TRAINREPRO_PYPI_JSON": "http://127.0.0.1:9/"}, 3,
             "TRAINREPRO_OFFLINE forbids installing it"),
            ("offline misspelt", run("deepspeed==0.18.6"), {"TRAINREPRO_OFFLINE": "ture"}, 2,
             "TRAINREPRO_OFFLINE: expected 1, true or yes (on) or 0, false, no or empty (off); "
             "found \"ture\""),
            ("release list is a device", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": "file:///dev/zero"}, 2,
             "TRAINREPRO_PYPI_JSON=file:///dev/zero: expected a regular file, found a character "
             "device"),
            ("release list is a FIFO", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": fifo.as_uri()}, 2, "expected a regular file, found a FIFO"),
            # fdopen of a directory raised IsADirectoryError: a traceback, not this line.
            ("release list is a directory", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": folder.as_uri()}, 2,
             "expected a regular file, found a directory"),
            ("release list is a list", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": as_list}, 3,
             ": the document: expected an object, found a list"),
            ("files as a string", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": files_as_string}, 3,
             ": /releases/0.18.4: expected a list of files, found a string"),
            ("mirror password masked", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": "http://mirror-user:s3cret-pw@127.0.0.1:9/deepspeed/json"},
             3, "cannot reach the package index "
                "TRAINREPRO_PYPI_JSON=http://***@127.0.0.1:9/deepspeed/json", {"absent": "s3cret"}),
            ("10,000-character version", run("deepspeed==" + LONG_VERSION), {}, 2,
             "found \"deepspeed==0.11111", {"absent": "1" * 200, "at_most": 1000}),
            ("Unicode-digit version", run("deepspeed==\u0660.\u0661\u0669.\u0668"), {}, 2,
             "--engine: expected reference, deepspeed, deepspeed==VERSION"),
            ("cache path with ':'", run("deepspeed==0.18.6"), {"TRAINREPRO_CACHE": "/tmp/a:b"}, 2,
             "TRAINREPRO_CACHE: expected an absolute path without ':'"),
            ("relative cache path", run("deepspeed==0.18.6"), {"TRAINREPRO_CACHE": "cache"}, 2,
             "TRAINREPRO_CACHE: expected an absolute path without ':'"),
            ("no network", run("deepspeed==0.18.6"),
             {"TRAINREPRO_PYPI_JSON": "http://127.0.0.1:9/"}, 3,
             "cannot reach the package index TRAINREPRO_PYPI_JSON=http://127.0.0.1:9/"),
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
            # Known not to run over this torch (harness/worker/unrunnable_releases.cpp): refused
            # before the release list is read or anything installed.
            ("run a release refused up front", run("deepspeed==0.14.2"), {}, 2,
             "--engine deepspeed==0.14.2: refused: DeepSpeed 0.14.2 cannot run over torch 2.11.0",
             {"no_release_folder": True}),
            ("bisect reference engine", bisect("0.18.4", "0.19.0", "reference"), {}, 2,
             "bisect: --engine must be deepspeed"),
            ("bisect no network", bisect("0.18.4", "0.19.0"),
             {"TRAINREPRO_PYPI_JSON": "http://127.0.0.1:9/"}, 3,
             "cannot reach the package index TRAINREPRO_PYPI_JSON=http://127.0.0.1:9/"),
            # The release list is read, no release may be installed: each is skipped with its
            # reason, and with nothing to compare the search ends (exit 3).
            ("bisect offline", bisect("0.18.4", "0.19.0"), {"TRAINREPRO_OFFLINE": "1"}, 3,
             "could not run (skipped): 0.18.4 (--engine deepspeed==0.18.4: not installed in"),
            ("bisect offline, nothing to compare", bisect("0.18.4", "0.19.0"),
             {"TRAINREPRO_OFFLINE": "1"}, 3,
             "bisect: no release of the range could run: nothing to compare; 3 probes of 3 "
             "releases"),
            ("bisect Unicode-digit release", bisect("\u0660.\u0661\u0669.\u0668", "0.19.0"),
             {}, 2, "bisect: --good: expected a release as MAJOR.MINOR.PATCH in ASCII digits",
             {"no_release_folder": True}),
            ("bisect 10,000-character release", bisect("0.18.4", LONG_VERSION), {}, 2,
             "bisect: --bad: expected a release", {"absent": "1" * 200, "at_most": 1000}),
            ("bisect 300 releases", bisect("0.1.0", "0.300.0"),
             {"TRAINREPRO_PYPI_JSON": many, "TRAINREPRO_OFFLINE": "1"}, 3,
             "300 releases from 0.1.0 (good) to 0.300.0 (bad)"),
            ("bisect bad cache path", bisect("0.18.4", "0.19.0"), {"TRAINREPRO_CACHE": "/x:y"}, 2,
             "bisect: TRAINREPRO_CACHE: expected an absolute path"),
            # The install's reason, pip's own lines included, under the probe's line.
            ("bisect install failure", bisect("0.18.4", "0.19.0"), no_pip, 3,
             "pip download failed"),
        ]
        for case in cases:
            name, arguments, extra, code, text = case[:5]
            checks = case[5] if len(case) > 5 else {}
            cache = folder / name.replace(" ", "-")
            results = folder / (name.replace(" ", "-") + "-results")
            env = {k: v for k, v in os.environ.items() if k != "TRAINREPRO_OFFLINE"}
            # The download store is shared by every cache (~/.cache/trainrepro/pip-downloads):
            # one of its own keeps the machine's stored sdists from installing these offline.
            env.update(TRAINREPRO_CACHE=str(cache), TRAINREPRO_PYPI_JSON=index.as_uri(),
                       XDG_CACHE_HOME=str(folder / "xdg"))
            env.update(extra)
            if arguments[0] == "run":
                arguments = arguments + ["--results", str(results)]
            completed = subprocess.run([trainrepro] + arguments, cwd=ROOT, env=env,
                                       capture_output=True, text=True, timeout=300)
            output = completed.stdout + completed.stderr
            if completed.returncode != code:
                failures.append(f"{name}: exit {completed.returncode}, expected {code}:\n{output}")
            elif text not in output:
                failures.append(f"{name}: the output lacks {text!r}:\n{output[:3000]}")
            elif checks.get("absent") and checks["absent"] in output:
                failures.append(f"{name}: the output shows {checks['absent'][:40]!r}:\n"
                                f"{output[:3000]}")
            elif len(output) > checks.get("at_most", len(output)):
                failures.append(f"{name}: {len(output)} characters of output, at most "
                                f"{checks['at_most']} expected:\n{output[:3000]}")
            elif checks.get("no_release_folder") and cache.exists() and any(
                    p.name.startswith("deepspeed-") for p in cache.iterdir()):
                failures.append(f"{name}: a release folder was made: {sorted(cache.iterdir())}")
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
