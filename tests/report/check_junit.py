#!/usr/bin/env python3
"""`trainrepro run --junit` writes JUnit XML valid against Jenkins' schema, one testsuite per
scenario folder, and agrees with the results files written beside it; every results file (a
file that did not load included) records where it came from.

usage: check_junit.py TRAINREPRO WORKDIR SCENARIO...
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
FAILING = {"failed", "not-reproduced"}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    trainrepro, workdir, scenarios = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
    if shutil.which("xmllint") is None:
        # A machine set up offline (TRAINREPRO_OFFLINE=1) may lack it; CTest shows a skip.
        print("skipped: xmllint (Debian's libxml2-utils) is not installed")
        sys.exit(77)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    results_dir, junit = workdir / "results", workdir / "junit.xml"
    run = subprocess.run([trainrepro, "run", *scenarios, "--results", str(results_dir),
                          "--junit", str(junit)], capture_output=True, text=True)
    print(run.stdout[-3000:], run.stderr[-2000:])
    if not junit.exists():
        fail(f"no JUnit file written (exit {run.returncode})")

    lint = subprocess.run(["xmllint", "--noout", "--schema", str(HERE / "junit-10.xsd"),
                           str(junit)], capture_output=True, text=True)
    if lint.returncode != 0:
        fail("not valid against the Jenkins JUnit schema:\n" + lint.stderr)
    print(lint.stderr.strip())

    results = {}
    for path in sorted(results_dir.glob("*.json")):
        data = json.loads(path.read_text())
        provenance = data.get("provenance")
        if not isinstance(provenance, dict):
            fail(f"{path.name}: no provenance")
        for key in ("started_at", "host", "machine", "git_commit", "command_line",
                    "trainrepro_version", "torch_version", "cuda_version"):
            if not isinstance(provenance.get(key), str):
                fail(f"{path.name}: provenance.{key} missing")
        if not provenance["started_at"].endswith("Z") or "run" not in provenance["command_line"]:
            fail(f"{path.name}: provenance looks wrong: {provenance}")
        if not (data["diagnosis"] is None or data["diagnosis"]):
            fail(f"{path.name}: an empty diagnosis is written as \"\", not null")
        results[(os.path.dirname(data["scenario"]["file"]) or ".",
                 data["scenario"]["name"] or os.path.basename(data["scenario"]["file"]))] = data
    if len(results) != len(list(results_dir.glob("*.json"))):
        fail("two results files for one scenario")
    if not any(name.startswith("not-loaded--") for name in os.listdir(results_dir)):
        fail("the scenario that did not load has no results file")

    root = ET.parse(junit).getroot()
    cases = {}
    for suite in root.findall("testsuite"):
        folder = suite.get("name")
        if not folder:
            fail("a testsuite without a name")
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        counted = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for case in suite.findall("testcase"):
            if case.get("classname") != folder.replace("/", "."):
                fail(f"classname {case.get('classname')} for folder {folder}")
            if case.get("classname") == case.get("name"):
                fail("classname equals the test name")
            key = (folder, case.get("name"))
            if key in cases:
                fail(f"{key} twice")
            cases[key] = case
            counted["tests"] += 1
            outcome = props.get(case.get("name") + ".outcome")
            data = results.get(key)
            if data is None:
                fail(f"{key} in the JUnit file but has no results file")
            if outcome != data["outcome"]:
                fail(f"{key}: outcome property {outcome}, results say {data['outcome']}")
            failure, error, skipped = (case.find("failure"), case.find("error"),
                                       case.find("skipped"))
            if outcome in FAILING:
                counted["failures"] += 1
                if failure is None or failure.get("type") != outcome:
                    fail(f"{key}: {outcome} without a <failure type={outcome}>")
                if data["diagnosis"] and data["diagnosis"] not in failure.text:
                    fail(f"{key}: the failure text lacks the diagnosis")
            elif outcome == "error":
                counted["errors"] += 1
                if error is None or error.get("type") != data["error_source"]:
                    fail(f"{key}: error without <error type={data['error_source']}>")
            elif outcome == "skipped":
                counted["skipped"] += 1
                if skipped is None:
                    fail(f"{key}: skipped without <skipped>")
            elif failure is not None or error is not None or skipped is not None:
                fail(f"{key}: {outcome} yet marked as not passing")
            if outcome == "reproduced" and "outcome: reproduced" not in case.find("system-out").text:
                fail(f"{key}: a reproduction is not distinguishable from a pass")
        for attribute, value in counted.items():
            if int(suite.get(attribute, "0")) != value:
                fail(f"suite {folder}: {attribute}={suite.get(attribute)}, counted {value}")
    if set(cases) != set(results):
        fail(f"JUnit cases {sorted(cases)} vs results {sorted(results)}")
    outcomes = sorted({data["outcome"] for data in results.values()})
    print(f"OK: {len(cases)} test cases in {len(root.findall('testsuite'))} suites, outcomes "
          f"{outcomes}, valid against junit-10.xsd, every results file has its provenance")


if __name__ == "__main__":
    main()
