"""Installs one DeepSpeed release from PyPI into trainrepro's cache, over the torch of the Python
that runs this script (never a second torch, never into that Python itself):

    python install_release.py VERSION HOME [DOWNLOADS]
    python install_release.py --list [FILE] (every final release as JSON: {"0.18.6": false, …},
                                          true for a yanked one; for `trainrepro bisect`; into
                                          FILE when given, else after a marker on stdout)

HOME (cache/deepspeed-VERSION) receives site/ (deepspeed, built from its sdist with no ops
precompiled: DS_BUILD_OPS=0, ops compile just in time on first use into HOME/torch_extensions),
deps/ (the release's own requirements less torch and numpy, which the venv has) and, last, the
stamp HOME/.trainrepro-complete: JSON naming the release and listing every file installed (its
path under HOME, size and sha256), which trainrepro checks before each use (a release installed
by an earlier trainrepro, whose stamp lists no files, has its files listed as they are). An interrupted
install is redone from scratch; concurrent installs of one release wait for each other
(HOME.lock). Temporary files live in HOME.tmp (removed at the end and by the next install); pip
dies with this installer and this installer with its parent (install_guard.py).

What pip downloads (the sdist, the requirements' wheels, the build tools) is kept in DOWNLOADS
(trainrepro passes ~/.cache/trainrepro/pip-downloads, whatever cache HOME is in; without it,
pip-downloads beside HOME) and installed from there: a reinstall, another cache, or another
release with the same requirements fetches nothing it fetched before (download_store.py). The
release list the index answered is kept there too, so that installing a release it names as
published asks the index nothing for a day (kept_release_list.py).

TRAINREPRO_OFFLINE (1/true/yes, or 0/false/no/empty) forbids reaching the network;
TRAINREPRO_PYPI_JSON names another release list (release_index.py).

Exit codes, as `trainrepro run --engine deepspeed==VERSION` passes them on:
  0  installed (or already was)
  2  PyPI has no such release (the nearest ones are named), or it was yanked; a bad version or
     environment value
  3  PyPI cannot be reached, pip failed, or the installed package does not import
  128+N  stopped by signal N (nothing left behind)
Used by trainrepro (compiled into the binary) and by tests/deepspeed_oracle/install_deepspeed.sh.
"""
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

from download_store import install_from_store, sdist_from_store, store_folder
from import_check import check_import
from install_guard import Stopped, exit_code_of, guard_installer, private_temporary_folder, \
    run_guarded
from kept_release_list import releases_for_install
from release_index import excerpt, fail, index_url, is_release, named, published_releases, say

# The venv's own copies are kept: torch is what trainrepro was built with, and numpy is torch's.
KEPT_FROM_VENV = {"torch", "numpy"}
STAMP = ".trainrepro-complete"
STAMP_FORMAT = 2  # 2: the stamp lists every file; an earlier stamp has no "files" (listed then)


def offline():
    value = os.environ.get("TRAINREPRO_OFFLINE", "")
    if value.lower() in ("1", "true", "yes"):
        return True
    if value.lower() in ("", "0", "false", "no"):
        return False
    fail(2, "TRAINREPRO_OFFLINE: expected 1, true or yes (on) or 0, false, no or empty (off); "
            f"found {excerpt(value)}")


def version_key(text):
    return tuple(int(part) for part in re.findall(r"[0-9]+", text)[:3])


def nearest(version, releases, count=4):
    """The releases (a list) around `version`: up to count/2 below it and the rest above."""
    ordered = sorted(releases, key=version_key)
    below = [v for v in ordered if version_key(v) < version_key(version)]
    above = [v for v in ordered if version_key(v) > version_key(version)]
    chosen = below[-(count // 2):] + above[:count - min(len(below), count // 2)]
    return chosen[:count]


def run_pip(*arguments, env=None):
    """pip's CompletedProcess (stdout and stderr together). Its own cache is off: what it
    downloads is kept in the download store instead (download_store.py says why)."""
    command = [sys.executable, "-m", "pip", *arguments, "--quiet", "--no-cache-dir",
               "--progress-bar", "off", "--disable-pip-version-check"]
    return run_guarded(command, env=env)


def pip(*arguments, env=None):
    """run_pip, ending the install (exit 3) with pip's last lines when it fails."""
    result = run_pip(*arguments, env=env)
    if result.returncode != 0:
        tail = "\n".join(result.stdout.strip().splitlines()[-15:])
        unreachable = any(word in tail for word in ("NewConnectionError", "Network is unreachable",
                                                    "Temporary failure in name resolution",
                                                    "ConnectTimeout", "ReadTimeout"))
        fail(3, f"pip {arguments[0]} failed ({'PyPI unreachable' if unreachable else 'exit ' + str(result.returncode)}):\n{tail}")


def requirements_of(sdist):
    """The release's requirements/requirements.txt, less what the venv keeps."""
    with tarfile.open(sdist) as archive:
        member = next((m for m in archive.getmembers()
                       if m.name.endswith("/requirements/requirements.txt")), None)
        if member is None:
            fail(3, f"{os.path.basename(sdist)} has no requirements/requirements.txt")
        text = archive.extractfile(member).read().decode()
    kept = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = re.split(r"[\s<>=!~;\[]", line, maxsplit=1)[0].lower().replace("_", "-")
        if name not in KEPT_FROM_VENV:
            kept.append(line)
    return kept


def file_list(home):
    """Every file under HOME/site and HOME/deps: {"path", "size", "sha256"}, sorted by path."""
    files = []
    for top in ("site", "deps"):
        for folder, _, names in os.walk(os.path.join(home, top)):
            for name in names:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    continue  # a link's target is listed where it lives
                digest = hashlib.sha256()
                with open(path, "rb") as file:
                    for block in iter(lambda: file.read(1 << 20), b""):
                        digest.update(block)
                files.append({"path": os.path.relpath(path, home), "size": os.path.getsize(path),
                              "sha256": digest.hexdigest()})
    return sorted(files, key=lambda f: f["path"])


def write_stamp(home, version, seconds):
    """The stamp, written last and atomically: the release, and every file it installed."""
    stamp = {"format": STAMP_FORMAT, "deepspeed": version, "python": sys.executable,
             "seconds": round(seconds), "files": file_list(home)}
    partial = os.path.join(home, STAMP + ".partial")
    with open(partial, "w") as file:
        json.dump(stamp, file, separators=(",", ":"))
        file.write("\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, os.path.join(home, STAMP))


def read_stamp(home):
    """The stamp's JSON object, {} when there is none, None when it is not a JSON object."""
    try:
        with open(os.path.join(home, STAMP)) as file:
            stamp = json.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def installed(home):
    """True when HOME holds a stamp of this format."""
    stamp = read_stamp(home)
    return stamp is not None and stamp.get("format") == STAMP_FORMAT


def list_earlier_install(version, home):
    """A release installed by an earlier trainrepro has a stamp without a file list: its files
    are listed as they are now (no download: an offline machine keeps its releases). True when
    it was such a release."""
    stamp = read_stamp(home)
    if not stamp or "files" in stamp or stamp.get("deepspeed") != version:
        return False
    say(f"deepspeed=={version} in {home} was installed by an earlier trainrepro: listing its "
        "files in its stamp")
    write_stamp(home, version, stamp.get("seconds", 0))
    return True


def install(version, home, downloads=None):
    started = time.monotonic()
    say(f"installing deepspeed=={version} into {home} (once; later runs reuse it)")
    shutil.rmtree(home, ignore_errors=True)
    site, deps = os.path.join(home, "site"), os.path.join(home, "deps")
    os.makedirs(site)
    os.makedirs(deps)
    scratch = tempfile.mkdtemp(prefix="sdist-")  # inside the private TMPDIR
    store = store_folder(home, downloads)
    sdist, fetched = sdist_from_store(store, version, scratch, pip, fail)
    requirements = requirements_of(sdist)
    if requirements:
        fetched |= install_from_store(store, deps, requirements, run_pip, pip)
    # setup.py imports torch: build against the venv's torch (no build isolation, which
    # would download torch again); wheel and setuptools serve the build only.
    build_tools = os.path.join(scratch, "build-tools")
    fetched |= install_from_store(store, build_tools, ["wheel", "setuptools<81"], run_pip, pip)
    say(f"downloads {'fetched into' if fetched else 'all found in'} {store}")
    env = dict(os.environ, PYTHONPATH=f"{build_tools}:{deps}", DS_BUILD_OPS="0",
               DS_ACCELERATOR=os.environ.get("DS_ACCELERATOR", "cpu"))
    pip("install", "--target", site, "--no-deps", "--no-build-isolation", sdist, env=env)
    answer, reason = check_import(
        run_guarded, sys.executable,
        dict(os.environ, PYTHONPATH=f"{site}:{deps}", PYTHONDONTWRITEBYTECODE="1",
             TORCHINDUCTOR_CACHE_DIR=os.path.join(os.environ["TMPDIR"], "torchinductor"),
             DS_ACCELERATOR=os.environ.get("DS_ACCELERATOR", "cpu")),
        os.path.join(scratch, "import-answer.json"))
    if reason is not None:
        fail(3, f"deepspeed {version} was installed but does not import: {reason}")
    if answer["deepspeed"] != version or not answer["deepspeed_file"].startswith(site):
        fail(3, f"the installed package is deepspeed {answer['deepspeed']} from "
                f"{answer['deepspeed_file']}, not {version} from {site}")
    if answer["torch_file"].startswith(home):
        fail(3, f"torch was installed again into {home}: {answer['torch_file']}")
    write_stamp(home, version, time.monotonic() - started)
    say(f"deepspeed=={version} installed in {time.monotonic() - started:.0f} s")


def list_releases(arguments):
    url = index_url()
    if offline() and not url.startswith("file:"):
        fail(3, f"the release list comes from {named(url)}, and TRAINREPRO_OFFLINE forbids "
                "reaching it (TRAINREPRO_PYPI_JSON may name a file:// copy)")
    text = json.dumps(published_releases(url))
    if not arguments:
        print("TRAINREPRO-RELEASES " + text)
        return
    with open(arguments[0] + ".partial", "w") as file:
        file.write(text + "\n")
    os.replace(arguments[0] + ".partial", arguments[0])


def install_once(version, home, downloads=None):
    """Installs under HOME.lock, its temporary files in HOME.tmp; a stop signal or a failure
    removes the partial HOME and HOME.tmp."""
    with open(home + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it: wait for it
        if installed(home) or list_earlier_install(version, home):
            return
        if offline():
            fail(3, f"deepspeed=={version} is not installed in {home} and TRAINREPRO_OFFLINE "
                    "forbids installing it")
        releases = releases_for_install(version, index_url(), store_folder(home, downloads))
        usable = [v for v, yanked in releases.items() if not yanked]
        if version not in releases:
            fail(2, f"PyPI has no deepspeed {version}; the nearest releases: "
                    f"{', '.join(nearest(version, usable))}")
        if releases[version]:
            fail(2, f"deepspeed {version} was yanked from PyPI; the nearest releases: "
                    f"{', '.join(nearest(version, usable))}")
        private_temporary_folder(home + ".tmp")
        finished = False
        try:
            install(version, home, downloads)
            finished = True
        finally:
            shutil.rmtree(home + ".tmp", ignore_errors=True)
            if not finished:
                shutil.rmtree(home, ignore_errors=True)


def main():
    guard_installer()
    if sys.argv[1:2] == ["--list"] and len(sys.argv) <= 3:
        list_releases(sys.argv[2:])
        return
    if len(sys.argv) not in (3, 4):
        fail(2, "usage: install_release.py VERSION HOME [DOWNLOADS] | --list [FILE]")
    version, home = sys.argv[1], os.path.abspath(sys.argv[2])
    downloads = os.path.abspath(sys.argv[3]) if len(sys.argv) == 4 else None
    if not is_release(version):
        fail(2, f"deepspeed=={excerpt(version)}: expected a release as MAJOR.MINOR.PATCH in "
                "ASCII digits, at most 6 each (0.18.8)")
    offline()  # a bad value is refused before anything else
    if installed(home):
        return
    os.makedirs(os.path.dirname(home), mode=0o700, exist_ok=True)
    install_once(version, home, downloads)


if __name__ == "__main__":
    try:
        main()
    except Stopped as stopped:
        say(f"stopped by signal {stopped.number}; nothing was left installed")
        sys.exit(exit_code_of(stopped))
