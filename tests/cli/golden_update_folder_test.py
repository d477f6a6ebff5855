#!/usr/bin/env python3
"""`golden --update FOLDER` with one file that does not load: that file is named, the goldens of
the others are written all the same (as `run` reports a bad file and goes on), exit 2.

    golden_update_folder_test.py TRAINREPRO
"""
import pathlib
import subprocess
import sys
import tempfile

DATA = pathlib.Path("tests/data/golden_folder")  # a_bad.json (a typo) and b_trains.json


def main():
    trainrepro = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        golden_dir = pathlib.Path(tmp) / "golden"
        done = subprocess.run([trainrepro, "golden", "--update", str(DATA),
                               "--golden-dir", str(golden_dir)],
                              capture_output=True, text=True, timeout=240)
        output = done.stdout + done.stderr
        problems = []
        if done.returncode != 2:
            problems.append(f"exit code {done.returncode}, expected 2")
        if "a_bad.json:/golden/stpes: unknown key" not in output:
            problems.append("the file that does not load is not named")
        if "1 file(s) did not load" not in output:
            problems.append("no line says how many files did not load")
        goldens = sorted(p.name for p in golden_dir.glob("*.safetensors")) if golden_dir.exists() else []
        if len(goldens) != 1:
            problems.append(f"expected the good scenario's golden only, found {goldens}")
        # The written golden is the good scenario's: `run` reads it and judges it.
        ran = subprocess.run([trainrepro, "run", str(DATA / "b_trains.json"),
                              "--golden-dir", str(golden_dir)],
                             capture_output=True, text=True, timeout=240)
        if ran.returncode != 0:
            problems.append(f"run of b_trains.json on the written golden: exit {ran.returncode}\n"
                            + ran.stdout + ran.stderr)
    if problems:
        print("\n".join(problems))
        print("----- output -----\n" + output)
        return 1
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
