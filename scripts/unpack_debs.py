#!/usr/bin/env python3
"""Unpacks Debian packages (.deb) into a prefix without apt or dpkg: for a machine whose image
lacks our Debian packages and has no network (a lent GPU machine), from the kit that
scripts/gpu-kit prepares. A .deb is an ar archive whose data.tar.* holds the files; Python's
standard library reads both, so nothing beyond python3 is needed.

usage: unpack_debs.py PREFIX DEB...
"""
import io
import os
import sys
import tarfile


def ar_members(data):
    """(name, bytes) of each member of an ar archive."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    offset = 8
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        offset += 60
        yield name, data[offset:offset + size]
        offset += size + (size % 2)  # members are 2-byte aligned


def unpack(deb, prefix):
    with open(deb, "rb") as f:
        data = f.read()
    for name, member in ar_members(data):
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(member)) as tar:
                # Paths from the package only, never outside the prefix, where this Python
                # can check it (3.11.4 and later); the packages are Debian's own either way.
                safe = {"filter": "tar"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(prefix, **safe)
            return
    raise ValueError(f"{deb}: no data.tar member")


def main():
    prefix, debs = sys.argv[1], sys.argv[2:]
    os.makedirs(prefix, exist_ok=True)
    for deb in debs:
        try:
            unpack(deb, prefix)
        except (OSError, ValueError, tarfile.TarError) as error:
            sys.exit(f"unpack_debs: {deb}: {error}")
    print(f"unpack_debs: {len(debs)} packages into {prefix}")


if __name__ == "__main__":
    main()
