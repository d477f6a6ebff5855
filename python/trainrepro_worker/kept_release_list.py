"""The release list the index answered, kept in the download store (download_store.py) beside the
sdists and wheels, so that installing a release the kept list names as published and not yanked
asks the index nothing: `run --engine deepspeed==0.17.5` into a fresh TRAINREPRO_CACHE, each probe
of a bisect, each release of a sweep. The list is fetched again when the release is not in it (a
newer release), is yanked in it, or when the list is older than MAX_AGE_SECONDS. When the index
cannot be reached then and the kept list names the release, the install goes on from the kept list
and says so in one line on stderr.

A kept list is untrusted input, as the index's answer is: it is read through release_index.py's
own bounds and shape checks (read_regular_file, releases_in), and one that fails them is refused,
naming the file, and fetched again. It is written whole: a temporary file in the store (0700),
then os.replace, in the shape of PyPI's JSON API.
"""
import hashlib
import json
import os
import tempfile
import time
import urllib.parse

from release_index import UnusableList, fail, fetch_releases, named, read_regular_file, \
    releases_in, say, shown_url

# A release newer than the kept list is fetched again whatever the list's age, so the age bounds
# only how long a yank (or an un-yank) goes unseen. DeepSpeed yanks a release rarely and
# publishes one every week or two; a day lets a bisect or a sweep (hours, dozens of installs) and
# a day of test runs ask the index once, and no yank goes unseen for more than a day.
MAX_AGE_SECONDS = 24 * 60 * 60
PREFIX = "release-list-"  # not "deepspeed-": pip reads the store with --find-links


def kept_list_path(store, url):
    """The file in `store` that keeps the list of the index at `url`.

    One file per index URL (a hash of it in the name) rather than PyPI's list alone:
    TRAINREPRO_PYPI_JSON names a mirror or a test's fixture, and a list kept by URL never answers
    for another index (a fixture's made-up releases cannot let a real install skip PyPI's list,
    and PyPI's list cannot hide a fixture's yanked release), while a mirror's users, who may not
    reach PyPI at all, still ask their index once. The user:password of a mirror's URL is left
    out of the hash: it names the same list, and nothing derived from a password is written."""
    try:
        parts = urllib.parse.urlsplit(url)
        key = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
    except ValueError:
        key = url  # fetching it fails the same way; the name needs only to be stable
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(store, f"{PREFIX}{digest}.json")


def read_kept_list(path):
    """({version: yanked}, age in seconds) of the list kept at `path`; (None, None) when there is
    none, or when it fails the checks (refused, naming the file, to be fetched again)."""
    if not os.path.lexists(path):
        return None, None
    source = f"the release list kept in {path}"
    try:
        releases = releases_in(read_regular_file(path, source), source)
        return releases, time.time() - os.stat(path).st_mtime
    except (UnusableList, OSError) as refusal:
        say(f"{refusal}: refused; fetching the list again")
        return None, None


def keep_list(path, url, releases):
    """Writes `releases` to `path` whole. A store that cannot take it costs only a fetch next
    time: said, not fatal."""
    ordered = sorted(releases, key=lambda v: tuple(int(part) for part in v.split(".")))
    # "index" is for a person reading the store; the file's name is what ties it to its index.
    document = {"index": shown_url(url),
                "releases": {v: [{"yanked": releases[v]}] for v in ordered}}
    partial = None
    try:
        descriptor, partial = tempfile.mkstemp(dir=os.path.dirname(path),
                                               prefix=os.path.basename(path) + ".",
                                               suffix=".partial")
        with os.fdopen(descriptor, "w") as file:
            json.dump(document, file, separators=(",", ":"))
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
        partial = None
    except OSError as error:
        say(f"cannot keep the release list in {path}: {error.strerror or error}; the next "
            f"install asks {named(url)} again")
    finally:
        if partial is not None:  # a failed write or a stop signal (install_guard.Stopped)
            try:
                os.unlink(partial)
            except OSError:
                pass


def releases_for_install(version, url, store):
    """{version: yanked} of the index at `url`: the list kept in `store` when it names `version`
    as published and not yanked and is younger than MAX_AGE_SECONDS, else the index's answer
    (then kept). Ends the install (`fail`, release_index's exit codes) when the index's answer
    cannot be had and no kept list names `version`."""
    path = kept_list_path(store, url)
    kept, age = read_kept_list(path)
    names_it = kept is not None and kept.get(version) is False
    if names_it and 0 <= age < MAX_AGE_SECONDS:  # an mtime ahead of the clock is not trusted
        return kept
    try:
        releases = fetch_releases(url)
    except UnusableList as refusal:
        # Exit 3 is an index that cannot be reached or answered something unusable; exit 2 is a
        # TRAINREPRO_PYPI_JSON to be fixed, which a kept list must not hide.
        if refusal.code != 3 or not names_it:
            fail(refusal.code, str(refusal))
        say(f"{refusal}; going on with the release list kept in {path} ({age / 3600:.1f} h "
            f"old), which names deepspeed {version} as published")
        return kept
    keep_list(path, url, releases)
    return releases
