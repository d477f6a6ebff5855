"""The release cache is the user's own and an installed release is checked beyond its stamp:

- a cache, or a release in it, owned by another user (as root: chown'd to nobody) is refused
  before anything in it runs (a planted deepspeed/__init__.py that would leave a marker), exit 3;
- a cache its group or others may write is refused, exit 3, naming the fix;
- a cache that is missing is created 0700;
- with HOME unset (cron, systemd) the cache is under the passwd entry's home, never /tmp;
- a file deleted from (or grown in) an installed release's site/ is named, with the fix, instead
  of an import error that blames the torch venv;
- a release installed by an earlier trainrepro (a stamp without a file list) has its files
  listed, offline too, rather than being refused or installed again;
- scripts/env.sh reads TRAINREPRO_CACHE, HOME and TRAINREPRO_OFFLINE as trainrepro does.
Releases here are folders written by hand and stamped by the installer's own write_stamp: no
network, no DeepSpeed.

Usage: check_release_cache.py TRAINREPRO
"""
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "python" / "trainrepro_worker"))
import install_release  # noqa: E402  the installer's own stamp writer

SCENARIO = "scenarios/accumulation/gas-missing.json"
RELEASE = "0.18.6"
# Final releases rarely installed, for the case that needs one the machine's cache lacks.
UNLIKELY_RELEASES = ("0.18.6", "0.16.7", "0.18.8", "0.19.6", "0.17.6", "0.15.5", "0.16.6")
NOBODY = 65534


def make_release(cache, marker):
    """cache/deepspeed-RELEASE as the installer leaves it, whose deepspeed leaves `marker` when
    imported."""
    home = cache / f"deepspeed-{RELEASE}"
    package = home / "site" / "deepspeed"
    package.mkdir(parents=True)
    (home / "deps").mkdir()
    (package / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n__version__ = {RELEASE!r}\n")
    (package / "version.py").write_text(f"version = {RELEASE!r}\n")
    install_release.write_stamp(str(home), RELEASE, 0)
    return home


def chown_tree(path, uid):
    for folder, folders, files in os.walk(path):
        for name in [folder] + [os.path.join(folder, n) for n in folders + files]:
            os.chown(name, uid, uid)


def main():
    trainrepro = sys.argv[1]
    failures = []
    as_root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="trainrepro-release-cache-") as folder:
        folder = pathlib.Path(folder)
        os.chmod(folder, 0o755)  # nobody must be able to reach the folders made for it

        def run(name, cache, code, text, marker=None, environment=None, absent=None,
                trains=False, release=RELEASE):
            env = {k: v for k, v in os.environ.items() if k != "TRAINREPRO_OFFLINE"}
            env.update(TRAINREPRO_OFFLINE="1", TRAINREPRO_PYPI_JSON="http://127.0.0.1:9/")
            if cache is not None:
                env["TRAINREPRO_CACHE"] = str(cache)
            env.update(environment or {})
            env = {k: v for k, v in env.items() if v is not None}
            results = folder / (name.replace(" ", "-") + "-results")
            completed = subprocess.run(
                [trainrepro, "run", SCENARIO, "--engine", f"deepspeed=={release}", "--results",
                 str(results)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            output = completed.stdout + completed.stderr
            if completed.returncode != code:
                failures.append(f"{name}: exit {completed.returncode}, expected {code}:\n{output}")
            elif text not in output:
                failures.append(f"{name}: the output lacks {text!r}:\n{output}")
            elif absent and absent in output:
                failures.append(f"{name}: the output shows {absent!r}:\n{output}")
            elif marker is not None and marker.exists():
                failures.append(f"{name}: the planted deepspeed/__init__.py ran:\n{output}")
            elif not trains and results.exists() and any(results.iterdir()):
                failures.append(f"{name}: results were written")
            else:
                print(f"ok  {name}: exit {code}")

        def case_folder(name):
            path = folder / name.replace(" ", "-")
            path.mkdir(mode=0o755)
            os.chmod(path, 0o755)
            return path

        if as_root:
            cache = case_folder("foreign cache") / "cache"
            cache.mkdir(mode=0o755)
            marker = folder / "foreign-cache-ran"
            make_release(cache, marker)
            chown_tree(cache, NOBODY)
            run("foreign-owned cache", cache, 3,
                f"{cache} (the trainrepro cache): owned by uid {NOBODY}, not by you (uid 0)",
                marker)

            cache = case_folder("foreign release") / "cache"
            cache.mkdir(mode=0o700)
            marker = folder / "foreign-release-ran"
            home = make_release(cache, marker)
            chown_tree(home, NOBODY)
            run("foreign-owned release", cache, 3,
                f"{home} (an installed DeepSpeed release): owned by uid {NOBODY}", marker)
        else:
            print("skip foreign-owned cache and release: chown needs root")

        cache = case_folder("group writable") / "cache"
        cache.mkdir()
        marker = folder / "group-writable-ran"
        make_release(cache, marker)
        os.chmod(cache, 0o775)
        run("group-writable cache", cache, 3,
            f"{cache} (the trainrepro cache): writable by its group (mode 0775)", marker)
        os.chmod(cache, 0o777)
        run("world-writable cache", cache, 3, f"writable by others (mode 0777): another user "
            f"could plant code there that runs as you. Run chmod go-w {cache}", marker)

        cache = case_folder("deleted file") / "cache"
        cache.mkdir(mode=0o700)
        home = make_release(cache, folder / "deleted-file-ran")
        (home / "site" / "deepspeed" / "__init__.py").unlink()
        run("file deleted from site/", cache, 3,
            f"{home} is incomplete or changed (site/deepspeed/__init__.py: No such file or "
            "directory): remove it and rerun to reinstall", absent="install it into that Python")

        cache = case_folder("grown file") / "cache"
        cache.mkdir(mode=0o700)
        home = make_release(cache, folder / "grown-file-ran")
        grown = home / "site" / "deepspeed" / "version.py"
        installed_size = grown.stat().st_size
        with open(grown, "a") as file:
            file.write("# edited\n")
        run("file changed in site/", cache, 3,
            f"{home} is incomplete or changed (site/deepspeed/version.py: {installed_size + 9} "
            f"bytes, installed with {installed_size})")

        # Installed by an earlier trainrepro: a stamp without a file list. Offline, its files are
        # listed as they are (no reinstall); the fake deepspeed then cannot train (exit 3).
        cache = case_folder("earlier stamp") / "cache"
        cache.mkdir(mode=0o700)
        home = make_release(cache, folder / "earlier-stamp-ran")
        (home / ".trainrepro-complete").write_text(
            '{"deepspeed": "%s", "python": "python3", "seconds": 231}\n' % RELEASE)
        run("stamp of an earlier trainrepro", cache, 3,
            "was installed by an earlier trainrepro: listing its files in its stamp",
            absent="forbids installing it", trains=True)
        listed = [f["path"] for f in install_release.read_stamp(str(home)).get("files", [])]
        if "site/deepspeed/__init__.py" not in listed:
            failures.append(f"stamp of an earlier trainrepro: its files were not listed: {listed}")

        cache = case_folder("new cache") / "parent" / "cache"
        run("missing cache created", cache, 3, "TRAINREPRO_OFFLINE forbids installing it")
        modes = {p: oct(p.stat().st_mode & 0o777) for p in (cache, cache.parent) if p.exists()}
        if modes != {cache: "0o700", cache.parent: "0o700"}:
            failures.append(f"missing cache created: expected both 0700, found {modes}")

        # No HOME: the passwd entry's home, offline, with a release not installed there (the
        # machine's own cache may hold many: a release sweep or a bisect installs them).
        home_cache = pwd.getpwuid(os.geteuid()).pw_dir + "/.cache/trainrepro/deepspeed-"
        absent_release = next((r for r in UNLIKELY_RELEASES
                               if not os.path.exists(home_cache + r)), None)
        if absent_release is None:
            print(f"skip HOME unset: every one of {UNLIKELY_RELEASES} is installed in "
                  f"{home_cache}*")
        else:
            run("HOME unset", None, 3, f"not installed in {home_cache}{absent_release}",
                absent="/tmp/.cache", release=absent_release,
                environment={"HOME": None, "XDG_CACHE_HOME": None, "TRAINREPRO_CACHE": None})

        def bash(name, script, environment, code, text):
            env = dict(os.environ)
            env.update(environment)
            env = {k: v for k, v in env.items() if v is not None}
            completed = subprocess.run(
                ["bash", "-c", f"set -euo pipefail; source scripts/env.sh; {script}"], cwd=ROOT,
                env=env, capture_output=True, text=True, timeout=60)
            output = completed.stdout + completed.stderr
            if completed.returncode != code or text not in output:
                failures.append(f"{name}: exit {completed.returncode} (expected {code}), "
                                f"expected {text!r}:\n{output}")
            else:
                print(f"ok  {name}: exit {code}")

        bash("env.sh: HOME unset", "echo $TRAINREPRO_CACHE",
             {"HOME": None, "XDG_CACHE_HOME": None, "TRAINREPRO_CACHE": None}, 0,
             pwd.getpwuid(os.geteuid()).pw_dir + "/.cache/trainrepro")
        bash("env.sh: ':' in TRAINREPRO_CACHE", "true", {"TRAINREPRO_CACHE": "/tmp/a:b"}, 2,
             "TRAINREPRO_CACHE: expected an absolute path without ':'")
        bash("env.sh: TRAINREPRO_OFFLINE=true", "echo offline=$TRAINREPRO_OFFLINE",
             {"TRAINREPRO_OFFLINE": "true"}, 0, "offline=1")
        bash("env.sh: TRAINREPRO_OFFLINE misspelt", "true", {"TRAINREPRO_OFFLINE": "ture"}, 2,
             "TRAINREPRO_OFFLINE: expected 1, true or yes")
        writable = case_folder("bash writable") / "cache"
        writable.mkdir()
        os.chmod(writable, 0o777)
        bash("env.sh: world-writable cache", "trainrepro_require_own_cache",
             {"TRAINREPRO_CACHE": str(writable)}, 3, "writable by its group or others (mode 777)")
        shutil.rmtree(folder / "foreign-cache", ignore_errors=True)
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
