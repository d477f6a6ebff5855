#!/usr/bin/env python3
"""Property test of `trainrepro export --python` (issue 32, item 5), the Python half of
tests/fuzz/export_fuzz.cpp: random hostile text (a seeded generator) in random fields of a
scenario and in its file name, many exports. Each export either
  - succeeds, and then the script's syntax tree is the benign scenario's script's tree except
    for the string constant EXPORTED reads, which json.loads reads back as the scenario exactly;
    every 10th script is also run up to its world-size check, and writes no PWNED;
  - or is refused with exit 2, a message, and no script, which this test allows only where the
    text cannot be in a scenario (a lone surrogate, bytes that are not UTF-8, an empty
    description).

Usage: export_property_test.py TRAINREPRO BASE_SCENARIO [--count N] [--seed S]
"""
import argparse
import json
import os
import pathlib
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_export_security import EXACT_INJECTION, Checker, export, shape  # noqa: E402

# Pieces that end or bend a Python literal, docstring, comment or line, mixed with random
# characters from every range (controls, Latin-1, the BMP, astral, lone surrogates).
PIECES = ['"""', "'''", '"', "'", "\\", "\\\n", "\\N{BULLET}", "\\N{", "\\x", "\\u12", "\n",
          "\r", "\r\n", "\x00", "\x0c", "\u2028", "\u202e", "\ufeff", "#",
          "# -*- coding: rot13 -*-",
          "open('PWNED', 'w').write('1')", "__EXPORTED_DATA__", "__ZOO_SOURCE__", "{0}", "%s",
          EXACT_INJECTION, ")", "(", "f'{__import__(\"os\")}'"]
RANGES = [(0x00, 0x1f), (0x20, 0x7e), (0x7f, 0xff), (0x100, 0xd7ff), (0xe000, 0xffff),
          (0x10000, 0x10ffff)]
SURROGATES = (0xd800, 0xdfff)  # alone, not UTF-8: a JSON file may spell one as \ud800


def random_text(rng):
    parts = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.5:
            parts.append(rng.choice(PIECES))
        else:
            low, high = SURROGATES if rng.random() < 0.02 else rng.choice(RANGES)
            parts.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 4))))
    return "".join(parts)


def has_lone_surrogate(text):
    """A surrogate that is not a high one followed by a low one (json.dumps writes a pair as
    two \\u escapes, which JSON reads back as one character)."""
    i = 0
    while i < len(text):
        c = ord(text[i])
        if 0xd800 <= c <= 0xdbff and i + 1 < len(text) and 0xdc00 <= ord(text[i + 1]) <= 0xdfff:
            i += 2
            continue
        if 0xd800 <= c <= 0xdfff:
            return True
        i += 1
    return False


def random_case(rng, base):
    """(scenario, texts put in, file name bytes, file bytes spoiled?)"""
    scenario = json.loads(json.dumps(base))
    texts = []

    def text():
        texts.append(random_text(rng))
        return texts[-1]

    fields = rng.sample(["description", "tags", "reference", "deepspeed", "nested", "name"],
                        rng.randint(1, 4))
    if "description" in fields:
        scenario["description"] = text()
    if "tags" in fields:
        scenario["tags"] = [text() for _ in range(rng.randint(1, 3))]
    if "reference" in fields:
        scenario["reference"] = {"url": "https://" + text(), "project": "deepspeed",
                                 "affected": text(), "fixed": text()}
    if "deepspeed" in fields:
        scenario["deepspeed"][text()] = text()
    if "nested" in fields:
        scenario["deepspeed"]["comment"] = {text(): [text(), {text(): None}, 1.5]}
    name = "case.json"
    if "name" in fields:  # a file name: any bytes but '/' and NUL
        raw = bytes(b for b in random_text(rng).encode("utf-8", "surrogatepass")
                    if b not in (0, ord("/")))
        if rng.random() < 0.3:
            raw += bytes([rng.randint(0x80, 0xff)])
        name = os.fsdecode(raw[:200] or b"x") + ".json"
    spoil = rng.random() < 0.1  # a byte that is not UTF-8 inside the description's text
    return scenario, texts, name, spoil


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trainrepro")
    parser.add_argument("base")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    trainrepro = os.path.abspath(args.trainrepro)
    base = json.loads(pathlib.Path(args.base).read_text(encoding="utf-8"))
    rng = random.Random(args.seed)
    exported = refused = 0
    with tempfile.TemporaryDirectory() as work:
        checker = Checker(trainrepro, work)
        folder = pathlib.Path(tempfile.mkdtemp(dir=work))
        benign = folder / "benign.json"
        benign.write_text(json.dumps(base), encoding="utf-8")
        done = export(trainrepro, benign, folder / "repro.py", folder)
        if done.returncode != 0:
            print(f"the benign scenario did not export: {done.stderr.decode(errors='replace')}")
            return 1
        benign_shape, _ = shape((folder / "repro.py").read_bytes())
        for case in range(args.count):
            scenario, texts, name, spoil = random_case(rng, base)
            what = f"case {case} (--seed {args.seed}), texts {texts!r}, file {name!r}"
            file = os.path.join(tempfile.mkdtemp(dir=work), name)
            # ensure_ascii: a lone surrogate is written as its \uD8xx escape, as a hand-written
            # file could hold it; the scenario loader must refuse it.
            content = json.dumps(scenario, indent=2).encode("ascii")
            if spoil:
                content = content.replace(b'"description": "', b'"description": "\xc3(', 1)
            pathlib.Path(file).write_bytes(content)
            if spoil or any(has_lone_surrogate(t) for t in texts):
                refused += 1
                checker.refused(what, file, ": invalid JSON: ")
            elif scenario["description"] == "":
                refused += 1
                checker.refused(what, file, ":/description: expected a sentence")
            else:
                exported += 1
                checker.runs_script = case % 10 == 0
                checker.export_ok(what, file, "repro.py", benign_shape, scenario)
    for failure in checker.failures:
        print("FAILED " + failure[:3000])
    print(f"{args.count} random cases (seed {args.seed}): {exported} exported and checked, "
          f"{refused} refused as expected, {len(checker.failures)} failure(s)")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
