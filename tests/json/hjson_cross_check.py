#!/usr/bin/env python3
"""trainrepro's hjson reader against hjson-py 3.1.0, the library DeepSpeed reads config files
with (deepspeed/runtime/config.py: hjson.load with a hook refusing repeated keys). Every config of
the corpus and every snippet below must read to the same value in both, or be refused by both.
Prints one line per input. Exit 77 (skipped) where hjson-py is not installed.

    hjson_cross_check.py HJSON_DUMP"""
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE.parent / "ds-config-corpus" / "configs"

# What pasted configs do, and the corners of hjson's syntax around them.
SNIPPETS = {
    "missing-commas": '{\n "train_batch_size": 8\n "fp16": {"enabled": true}\n}',
    "root-without-braces": '"optimizer": {"type": "Adam"}\nzero_optimization: {stage: 2}\n',
    "quoteless-keys-and-values": "{\n  train_batch_size: 16\n  optimizer: {type: AdamW}\n}",
    "quoteless-value-keeps-commas": '{\n  "note": hello, world\n  "n": 1\n}',
    "quoteless-value-then-brace": '{a: b}',
    "placeholder": '{\n  "train_batch_size": GBSIZE,\n  "stage": $ZERO_STAGE\n}',
    "numbers": '{\n a: 1e-3\n b: 007\n c: 1.\n d: -0.5 # comment\n e: 10 // comment\n'
               ' f: 3, g: 4\n h: 1E+2\n i: 9223372036854775808\n j: -0\n'
               ' k: 2.5e10\n l: 12345678901.0\n m: 1.5\n n: -3.0e2\n}',
    "literals": '{\n a: true story\n b: null,\n c: false  \n d: [true, false, null]\n}',
    "single-quotes": "{\n  'a': 'it\\'s',\n  b: '\"quoted\"'\n}",
    "multiline-string": "{\n  text:\n    '''\n    first\n      second\n    '''\n}",
    "key-space-before-colon": '{\n  lr  : 0.1\n}',
    "key-with-space": '{\n  my key: 1\n}',
    "arrays-by-lines": '{\n  betas: [\n    0.9\n    0.999\n  ]\n  empty: []\n}',
    "trailing-commas": '{"a": [1, 2,], "b": {"c": 3,},}',
    "comments": '# top\n{\n  /* block\n  comment */ "a": 1 // end\n  # hash\n  "b": "x # not a comment"\n}',
    "duplicate-key": '{"a": 1, "a": 2}',
    "duplicate-nested": '{"z": {"a": 1, "a": 1}}',
    "unclosed-object": '{"a": 1',
    "unclosed-string": '{"a": "x}',
    "empty": "",
    "only-comment": "# nothing here\n",
    "bare-number": "42",
    "bare-array": "[1, 2]",
    "unicode-escape": '{"a": "caf\\u00e9 \\ud83d\\ude00"}',
    "tab-in-string": '{"a": "x\ty"}',
    "colon-without-key": '{: 1}',
    "extra-data": '{"a": 1} {"b": 2}',
    "punctuator-value": '{"a": ,}',
    "bad-escape": '{"a": "\\q"}',
    "crlf": '{\r\n  a: 1\r\n  b: two\r\n}',
    "unclosed-comment": '{"a": 1 /* no end',
}


def hjson_py(path):
    import hjson

    def refuse_repeats(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"Duplicate keys in DeepSpeed config: {keys}")
        return dict(pairs)

    try:
        with open(path) as handle:
            return {"value": hjson.load(handle, object_pairs_hook=refuse_repeats)}
    except Exception as exception:  # what DeepSpeed would raise
        return {"error": f"{type(exception).__name__}: {exception}"}


def same(a, b):
    """Equal values of equal JSON types (1 and 1.0 differ: DeepSpeed's checks tell them apart);
    the order of an object's keys does not matter to DeepSpeed."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def main():
    try:
        import hjson  # noqa: F401
    except ImportError:
        print("hjson_cross_check: hjson-py is not installed (scripts/bootstrap installs it); skipped")
        return 77
    dump = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        inputs = sorted(CORPUS.glob("*.json"))
        for name, text in SNIPPETS.items():
            path = pathlib.Path(tmp) / f"{name}.hjson"
            path.write_bytes(text.encode())
            inputs.append(path)
        differences = 0
        for path in inputs:
            ours = json.loads(subprocess.run([dump, str(path)], capture_output=True, text=True,
                                             check=True).stdout)
            theirs = hjson_py(path)
            if "error" in ours or "error" in theirs:
                agree = "error" in ours and "error" in theirs
                said = f"ours: {ours.get('error', 'reads it')} | hjson-py: {theirs.get('error', 'reads it')}"
            else:
                agree = same(ours["value"], theirs["value"])
                said = "same value" if agree else f"ours {ours['value']!r} | hjson-py {theirs['value']!r}"
            differences += not agree
            print(f"{'agree' if agree else 'DIFFER':7} {path.name}: {said}"[:400])
    print(f"{len(inputs)} inputs, {differences} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
