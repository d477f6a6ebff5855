"""Installs one DeepSpeed release from PyPI into trainrepro's cache, over the torch of the Python
that runs this script (never a second torch, never into that Python itself):

    python install_release.py VERSION HOME
    python install_release.py --list      (every final release as JSON: {"0.18.6": false, …},
                                          true for a yanked one; for `trainrepro bisect`)

HOME (cache/deepspeed-VERSION) receives site/ (deepspeed, built from its sdist with no ops
precompiled: DS_BUILD_OPS=0, ops compile just in time on first use into HOME/torch_extensions),
deps/ (the release's own requirements less torch and numpy, which the venv has) and, last, the
stamp HOME/.trainrepro-complete. An interrupted install is redone from scratch; concurrent
installs of one release wait for each other (HOME.lock).

Exit codes, as `trainrepro run --engine deepspeed==VERSION` passes them on:
  0  installed (or already was)
  2  PyPI has no such release (the nearest ones are named), or it was yanked
  3  PyPI cannot be reached, pip failed, or the installed package does not import
Used by trainrepro (compiled into the binary) and by tests/deepspeed_oracle/install_deepspeed.sh.
"""
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request

# The release list comes from PyPI's JSON API (it marks yanked files); TRAINREPRO_PYPI_JSON names
# another URL (a file:// fixture in the tests, a mirror).
DEFAULT_INDEX = "https://pypi.org/pypi/deepspeed/json"
# The venv's own copies are kept: torch is what trainrepro was built with, and numpy is torch's.
KEPT_FROM_VENV = {"torch", "numpy"}
STAMP = ".trainrepro-complete"


def say(message):
    print(f"install_release: {message}", file=sys.stderr, flush=True)


def fail(code, message):
    say(message)
    sys.exit(code)


def version_key(text):
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def published_releases(index_url):
    """{version: yanked} for every final release with an sdist or wheel on the index."""
    try:
        with urllib.request.urlopen(index_url, timeout=60) as response:
            document = json.load(response)
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        fail(3, f"cannot reach the package index {index_url}: {error}")
    except ValueError as error:
        fail(3, f"{index_url} did not answer with JSON: {error}")
    releases = {}
    for version, files in (document.get("releases") or {}).items():
        if not re.fullmatch(r"\d+\.\d+\.\d+", version) or not files:
            continue  # pre-releases and empty entries
        releases[version] = all(f.get("yanked", False) for f in files)
    return releases


def nearest(version, releases, count=4):
    """The releases (a list) around `version`: up to count/2 below it and the rest above."""
    ordered = sorted(releases, key=version_key)
    below = [v for v in ordered if version_key(v) < version_key(version)]
    above = [v for v in ordered if version_key(v) > version_key(version)]
    chosen = below[-(count // 2):] + above[:count - min(len(below), count // 2)]
    return chosen[:count]


def pip(*arguments, env=None):
    command = [sys.executable, "-m", "pip", *arguments, "--quiet", "--no-cache-dir",
               "--progress-bar", "off", "--disable-pip-version-check"]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
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


def install(version, home):
    started = time.monotonic()
    say(f"installing deepspeed=={version} into {home} (once; later runs reuse it)")
    shutil.rmtree(home, ignore_errors=True)
    site, deps = os.path.join(home, "site"), os.path.join(home, "deps")
    os.makedirs(site)
    os.makedirs(deps)
    with tempfile.TemporaryDirectory(prefix="trainrepro-install-") as scratch:
        pip("download", f"deepspeed=={version}", "--no-deps", "--no-binary", ":all:", "-d", scratch)
        sdists = [f for f in os.listdir(scratch) if f.endswith((".tar.gz", ".zip"))]
        if len(sdists) != 1:
            fail(3, f"pip download left {sorted(os.listdir(scratch))}, not one sdist")
        sdist = os.path.join(scratch, sdists[0])
        requirements = requirements_of(sdist)
        if requirements:
            pip("install", "--target", deps, *requirements)
        # setup.py imports torch: build against the venv's torch (no build isolation, which
        # would download torch again); wheel and setuptools serve the build only.
        build_tools = os.path.join(scratch, "build-tools")
        pip("install", "--target", build_tools, "wheel", "setuptools<81")
        env = dict(os.environ, PYTHONPATH=f"{build_tools}:{deps}", DS_BUILD_OPS="0",
                   DS_ACCELERATOR=os.environ.get("DS_ACCELERATOR", "cpu"))
        pip("install", "--target", site, "--no-deps", "--no-build-isolation", sdist, env=env)
    check = subprocess.run(
        [sys.executable, "-c", "import deepspeed, torch, sys; "
         "print(deepspeed.__version__, deepspeed.__file__, torch.__file__)"],
        env=dict(os.environ, PYTHONPATH=f"{site}:{deps}",
                 DS_ACCELERATOR=os.environ.get("DS_ACCELERATOR", "cpu")),
        capture_output=True, text=True)
    words = check.stdout.split()
    if check.returncode != 0 or len(words) != 3:
        tail = "\n".join(check.stderr.strip().splitlines()[-8:])
        fail(3, f"deepspeed {version} was installed but does not import:\n{tail}")
    if words[0] != version or not words[1].startswith(site):
        fail(3, f"the installed package is deepspeed {words[0]} from {words[1]}, not {version} from {site}")
    if words[2].startswith(home):
        fail(3, f"torch was installed again into {home}: {words[2]}")
    with open(os.path.join(home, STAMP), "w") as stamp:
        stamp.write(json.dumps({"deepspeed": version, "python": sys.executable,
                                "seconds": round(time.monotonic() - started)}) + "\n")
    say(f"deepspeed=={version} installed in {time.monotonic() - started:.0f} s")


def main():
    if sys.argv[1:] == ["--list"]:
        index = os.environ.get("TRAINREPRO_PYPI_JSON") or DEFAULT_INDEX
        if os.environ.get("TRAINREPRO_OFFLINE") == "1" and not index.startswith("file:"):
            fail(3, f"the release list comes from {index}, and TRAINREPRO_OFFLINE=1 forbids "
                    "reaching it (TRAINREPRO_PYPI_JSON may name a file:// copy)")
        releases = published_releases(index)
        print("TRAINREPRO-RELEASES " + json.dumps(releases))
        return
    if len(sys.argv) != 3:
        fail(2, "usage: install_release.py VERSION HOME | --list")
    version, home = sys.argv[1], os.path.abspath(sys.argv[2])
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        fail(2, f"deepspeed=={version}: expected a release as MAJOR.MINOR.PATCH (0.18.8)")
    if os.path.exists(os.path.join(home, STAMP)):
        return
    os.makedirs(os.path.dirname(home), exist_ok=True)
    with open(home + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it: wait for it
        if os.path.exists(os.path.join(home, STAMP)):
            return
        if os.environ.get("TRAINREPRO_OFFLINE") == "1":
            fail(3, f"deepspeed=={version} is not installed in {home} and TRAINREPRO_OFFLINE=1 "
                    "forbids installing it")
        releases = published_releases(os.environ.get("TRAINREPRO_PYPI_JSON") or DEFAULT_INDEX)
        usable = [v for v, yanked in releases.items() if not yanked]
        if version not in releases:
            fail(2, f"PyPI has no deepspeed {version}; the nearest releases: "
                    f"{', '.join(nearest(version, usable))}")
        if releases[version]:
            fail(2, f"deepspeed {version} was yanked from PyPI; the nearest releases: "
                    f"{', '.join(nearest(version, usable))}")
        install(version, home)


if __name__ == "__main__":
    main()
