#!/usr/bin/env python3
"""Checks that Python's safetensors and torch read a golden written by trainrepro as described
in an expected-contents JSON file; with --write, writes that description with Python instead,
for trainrepro to read. Exit status 0 only when everything matches.

    read_with_python.py FILE.safetensors EXPECTED.json
    read_with_python.py --write FILE.safetensors EXPECTED.json
"""
import argparse
import json
import os
import struct
import sys

try:
    import safetensors
    import safetensors.torch
except ImportError:
    # A GPU machine's own Python (TRAINREPRO_TORCH_PYTHON) may lack safetensors: CTest shows a skip.
    print("skipped: this Python has no safetensors")
    sys.exit(77)
import torch


def expected_tensor(entry):
    dtype = getattr(torch, entry["dtype"])
    return torch.tensor(entry["values"], dtype=dtype).reshape(entry["shape"])


def check_layout(path, expected, problems):
    """The raw bytes, independently of the safetensors package: padding and file order."""
    with open(path, "rb") as f:
        raw = f.read()
    (header_length,) = struct.unpack("<Q", raw[:8])
    header_bytes = raw[8 : 8 + header_length]
    if header_length % 8 != 0:
        problems.append(f"header length {header_length} is not a multiple of 8")
    if header_bytes.rstrip(b" ") != header_bytes.rstrip():
        problems.append("header is padded with something other than spaces")
    header = json.loads(header_bytes)
    entries = {name: info for name, info in header.items() if name != "__metadata__"}
    file_order = sorted(entries, key=lambda name: tuple(entries[name]["data_offsets"]))
    expected_order = [entry["name"] for entry in expected["tensors"]]
    if file_order != expected_order:
        problems.append(f"file order is {file_order}, expected {expected_order}")


def check_contents(path, expected, problems):
    tensors = safetensors.torch.load_file(path)
    expected_names = [entry["name"] for entry in expected["tensors"]]
    if sorted(tensors) != sorted(expected_names):
        problems.append(f"names are {sorted(tensors)}, expected {sorted(expected_names)}")
    for entry in expected["tensors"]:
        name = entry["name"]
        if name not in tensors:
            continue
        actual = tensors[name]
        if str(actual.dtype) != "torch." + entry["dtype"]:
            problems.append(f"{name}: dtype {actual.dtype}, expected torch.{entry['dtype']}")
        elif list(actual.shape) != entry["shape"]:
            problems.append(f"{name}: shape {list(actual.shape)}, expected {entry['shape']}")
        elif actual.flatten().tolist() != entry["values"]:
            problems.append(
                f"{name}: values {actual.flatten().tolist()}, expected {entry['values']}"
            )

    with safetensors.safe_open(path, framework="pt") as f:
        metadata = f.metadata() or {}
    if metadata != expected["metadata"]:
        problems.append(f"metadata is {metadata}, expected {expected['metadata']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write FILE with Python instead")
    parser.add_argument("file")
    parser.add_argument("expected")
    args = parser.parse_args()
    with open(args.expected, encoding="utf-8") as f:
        expected = json.load(f)

    if args.write:
        tensors = {entry["name"]: expected_tensor(entry) for entry in expected["tensors"]}
        os.makedirs(os.path.dirname(os.path.abspath(args.file)), exist_ok=True)
        safetensors.torch.save_file(tensors, args.file, metadata=expected["metadata"])
        print(f"wrote {args.file} with safetensors {safetensors.__version__}")
        return 0

    problems = []
    try:
        check_layout(args.file, expected, problems)
        check_contents(args.file, expected, problems)
    except Exception as error:  # an unreadable file is a failed check, reported as such
        problems.append(f"cannot read: {type(error).__name__}: {error}")
    for problem in problems:
        print(f"{args.file}: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(
        f"{args.file}: OK with safetensors {safetensors.__version__}, torch {torch.__version__}: "
        f"{len(expected['tensors'])} tensors in file order, dtypes, shapes, values, metadata"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
