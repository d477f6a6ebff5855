"""The DeepSpeed release list, read from PyPI's JSON API (it marks yanked files) or from the URL
TRAINREPRO_PYPI_JSON names (a mirror, a file:// fixture in the tests). What it answers is input
like any other: bounded in size (MAX_BYTES) and time (DEADLINE_SECONDS), a file:// path must be
a regular file (a FIFO or /dev/zero is refused at once), and a document of another shape is
refused naming the JSON pointer. A URL is printed with its user and password masked. The copy of
the list kept in the download store (kept_release_list.py) is read through the same checks.

Exit codes (`UnusableList.code`, through `fail`): 2 the variable names something unusable (not
http(s) or file://, not a regular file); 3 the index cannot be reached, or what it answered is not
PyPI's JSON.
"""
import json
import os
import re
import stat
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_INDEX = "https://pypi.org/pypi/deepspeed/json"
VARIABLE = "TRAINREPRO_PYPI_JSON"
# PyPI's answer for deepspeed was 152 KB for 133 releases (2026-12); 16 MiB is a hundred times that.
MAX_BYTES = 16 << 20
DEADLINE_SECONDS = 90  # the whole download; trainrepro gives the list 120 s
# A final release as trainrepro names them: ASCII digits only (Python's \d also takes "٠.١٩.٨"),
# each part at most 6 digits (a 10,000-character version is not a release).
RELEASE = re.compile(r"[0-9]{1,6}\.[0-9]{1,6}\.[0-9]{1,6}", re.ASCII)


class UnusableList(Exception):
    """A release list (the index's answer or the copy kept of it) that cannot be used: str() is
    the one-line reason, `code` the exit code it ends an install with. An exception, not `fail`,
    so that a kept list that fails the checks is refused and fetched again, not fatal."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def say(message):
    print(f"install_release: {message}", file=sys.stderr, flush=True)


def fail(code, message):
    say(message)
    sys.exit(code)


def cut(text, at_most):
    """`text` escaped (JSON's escapes: no control character reaches the console), cut to at_most
    characters with its length said."""
    shown = json.dumps(text[:at_most], ensure_ascii=True)[1:-1]
    return shown if len(text) <= at_most else f"{shown}... ({len(text)} characters)"


def excerpt(text, at_most=60):
    """`text` quoted for a one-line message."""
    return f'"{cut(text, at_most)}"'


def is_release(text):
    return RELEASE.fullmatch(text) is not None


def shown_url(url):
    """The URL with any user:password@ replaced by ***@, escaped and cut to 200 characters."""
    try:
        parts = urllib.parse.urlsplit(url)
        if "@" in parts.netloc:
            url = urllib.parse.urlunsplit(
                parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))
    except ValueError:
        url = re.sub(r"//[^/]*@", "//***@", url)
    return cut(url, 200)


def index_url():
    return os.environ.get(VARIABLE) or DEFAULT_INDEX


def named(url):
    return f"{VARIABLE}={shown_url(url)}" if os.environ.get(VARIABLE) else shown_url(url)


def read_regular_file(path, source):
    """The bytes of the regular file at `path` (at most MAX_BYTES); `source` names it in the
    reason of an UnusableList."""
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise UnusableList(2, f"{source}: cannot open {excerpt(path, 200)}: {error.strerror}")
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):  # checked before fdopen, which raises on a directory
        os.close(descriptor)
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
                else "a directory" if stat.S_ISDIR(mode) else "not a regular file")
        raise UnusableList(2, f"{source}: expected a regular file, found {kind}")
    os.set_blocking(descriptor, True)
    with os.fdopen(descriptor, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise UnusableList(3, f"{source}: larger than {MAX_BYTES >> 20} MiB; PyPI's list is far "
                              "smaller")
    return data


def read_http_url(url):
    deadline = time.monotonic() + DEADLINE_SECONDS
    chunks, size = [], 0
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            while True:
                chunk = response.read(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_BYTES:
                    raise UnusableList(3, f"{named(url)}: the answer is larger than "
                                          f"{MAX_BYTES >> 20} MiB; PyPI's list is far smaller")
                if time.monotonic() > deadline:
                    raise UnusableList(3, f"{named(url)}: the answer did not arrive within "
                                          f"{DEADLINE_SECONDS} s")
                chunks.append(chunk)
    except (urllib.error.URLError, OSError, TimeoutError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise UnusableList(3, f"cannot reach the package index {named(url)}: {reason}")
    return b"".join(chunks)


def pointer(*keys):
    """An RFC 6901 JSON pointer to keys (each escaped and cut for a one-line message)."""
    return "".join("/" + cut(str(k).replace("~", "~0").replace("/", "~1"), 40) for k in keys)


def kind_of(value):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def fetch_releases(url):
    """{version: yanked} for every final release with files on the index at `url`; raises
    UnusableList when it cannot be reached or what it answers cannot be used."""
    scheme = urllib.parse.urlsplit(url).scheme.lower() if isinstance(url, str) else ""
    if scheme == "file":
        path = urllib.request.url2pathname(urllib.parse.urlsplit(url).path)
        return releases_in(read_regular_file(path, named(url)), named(url))
    if scheme in ("http", "https"):
        return releases_in(read_http_url(url), named(url))
    raise UnusableList(2, f"{named(url)}: expected an http://, https:// or file:// URL")


def published_releases(url):
    """fetch_releases, ending the process (`fail`) when the list cannot be had."""
    try:
        return fetch_releases(url)
    except UnusableList as refusal:
        fail(refusal.code, str(refusal))


def releases_in(data, source):
    """{version: yanked} for every final release with files in `data`, a document in the shape
    of PyPI's JSON API; raises UnusableList (3), `source` naming where `data` came from. The one
    reader of a release list: the index's answer and the kept copy both come through it."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise UnusableList(3, f"{source}: not JSON: {str(error)[:200]}")

    def wrong(keys, expected, found):
        raise UnusableList(3, f"{source}: {pointer(*keys) or 'the document'}: expected "
                              f"{expected}, found {kind_of(found)} (PyPI's JSON API: "
                              "{\"releases\": {\"0.18.6\": [{\"yanked\": false, ...}]}})")

    if not isinstance(document, dict):
        wrong([], "an object", document)
    listed = document.get("releases")
    if not isinstance(listed, dict):
        wrong(["releases"], "an object of releases", listed)
    releases = {}
    for version, files in listed.items():
        if not isinstance(files, list):
            wrong(["releases", version], "a list of files", files)
        for at, entry in enumerate(files):
            if not isinstance(entry, dict):
                wrong(["releases", version, at], "an object", entry)
            if not isinstance(entry.get("yanked", False), bool):
                wrong(["releases", version, at, "yanked"], "true or false", entry["yanked"])
        if is_release(version) and files:  # pre-releases and empty entries are left out
            releases[version] = all(entry.get("yanked", False) for entry in files)
    return releases
