#!/usr/bin/env python3
"""Runs a command and checks its exit code and output together (CTest's PASS_REGULAR_EXPRESSION
alone would ignore the exit code). Used by the CLI tests in tests/cli/cli_tests.cmake."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit", type=int, required=True, help="expected exit code")
    parser.add_argument("--output-regex", required=True,
                        help="must match somewhere in stdout+stderr (Python re, DOTALL)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    # A fresh, empty results folder: "@RESULTS@" in the command stands for it. After bad input
    # it holds nothing but the results file of each scenario that did not load (outcome
    # "error", named not-loaded--…): no golden, no other result, nothing half-written.
    with tempfile.TemporaryDirectory() as results:
        command = [part.replace("@RESULTS@", results) for part in command]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
        output = completed.stdout + completed.stderr
        written = []
        for name in sorted(os.listdir(results)):
            path = os.path.join(results, name)
            if name.startswith("not-loaded--") and name.endswith(".json"):
                with open(path) as f:
                    if json.load(f).get("outcome") == "error":
                        continue
            written.append(name)

    problems = []
    if completed.returncode != args.exit:
        problems.append(f"exit code: expected {args.exit}, found {completed.returncode}")
    if not re.search(args.output_regex, output, re.DOTALL):
        problems.append(f"output does not match: {args.output_regex}")
    if args.exit == 2 and written:
        problems.append(f"bad input wrote files: {written}")
    if problems:
        print("command: " + " ".join(command))
        print("\n".join(problems))
        print("----- output -----\n" + output)
        return 1
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
