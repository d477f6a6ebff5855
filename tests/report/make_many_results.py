#!/usr/bin/env python3
"""Makes a large results folder from a small one, for the report's size and load checks: each
results file is copied under new names (scenario name and file suffixed -copyK) until COUNT
files exist. The copies are real results, only renamed.

usage: make_many_results.py SOURCE_DIR TARGET_DIR COUNT
"""
import json
import pathlib
import shutil
import sys


def main():
    source, target, count = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
    originals = sorted(p for p in source.glob("*.json"))
    if not originals:
        sys.exit(f"make_many_results: no results files in {source}")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for k in range(count):
        original = originals[k % len(originals)]
        data = json.loads(original.read_text())
        copy = k // len(originals)
        scenario = data["scenario"]
        stem = (scenario["name"] or original.stem) + f"-copy{copy}"
        if scenario["name"]:
            scenario["name"] = stem
        scenario["file"] = scenario["file"].replace(".json", f"-copy{copy}.json")
        (target / (stem + ".json")).write_text(json.dumps(data))
    print(f"make_many_results: {count} results files in {target}")


if __name__ == "__main__":
    main()
