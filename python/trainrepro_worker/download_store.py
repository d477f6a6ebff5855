"""What install_release.py downloads, kept: the releases' sdists, their requirements' wheels and
the build tools, in one folder (trainrepro passes ~/.cache/trainrepro/pip-downloads, shared by
every cache), so that a reinstall, another cache or another release with the same requirements
installs from it without fetching them again.

pip's own HTTP cache is not enough: it keeps only responses that carry freshness headers, and a
proxy or mirror that strips them (as on the machines this was measured on) leaves it empty. The
store is plain files: pip downloads into it (checking each file against the index's hash) and
installs from it with --no-index; only what it lacks is fetched. One install at a time touches
it (STORE/.lock), so no install reads a file another is still writing.
"""
import contextlib
import fcntl
import os

LOCK = ".lock"
SDIST_ENDINGS = (".tar.gz", ".zip")


def store_folder(home, given=None):
    """`given`, else pip-downloads beside HOME in trainrepro's cache; created 0700 (the user's
    own, as the cache is)."""
    folder = given or os.path.join(os.path.dirname(home), "pip-downloads")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


@contextlib.contextmanager
def locked(store):
    with open(os.path.join(store, LOCK), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def stored_sdist(store, version):
    """The path of deepspeed VERSION's sdist in the store, or None."""
    for ending in SDIST_ENDINGS:
        path = os.path.join(store, f"deepspeed-{version}{ending}")
        if os.path.isfile(path):
            return path
    return None


def sdist_from_store(store, version, scratch, pip, fail):
    """deepspeed VERSION's sdist, downloaded into the store first when it is not there (into
    `scratch`, then moved in whole). Returns (path, fetched)."""
    with locked(store):
        kept = stored_sdist(store, version)
        if kept:
            return kept, False
        pip("download", f"deepspeed=={version}", "--no-deps", "--no-binary", ":all:", "-d", scratch)
        sdists = [f for f in os.listdir(scratch) if f.endswith(SDIST_ENDINGS)]
        if len(sdists) != 1:
            fail(3, f"pip download left {sorted(os.listdir(scratch))}, not one sdist")
        kept = os.path.join(store, sdists[0])
        os.replace(os.path.join(scratch, sdists[0]), kept)
        return kept, True


def install_from_store(store, target, requirements, run_pip, pip):
    """pip install --target TARGET REQUIREMENTS from the store alone; when the store lacks
    something, pip downloads the requirements into it first (the only network use) and the
    install is done again. Returns True when it had to fetch."""
    arguments = ("install", "--target", target, "--no-index", "--find-links", store,
                 *requirements)
    with locked(store):
        if run_pip(*arguments).returncode == 0:
            return False
        pip("download", "-d", store, *requirements)
        pip(*arguments)
        return True
