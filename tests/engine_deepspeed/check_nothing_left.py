"""An install of `run --engine deepspeed==VERSION` dies with the command that started it and
leaves nothing behind: stopped with Ctrl-C (SIGINT) while pip downloads, or with trainrepro
itself killed by kill -9 (no one tells the installer: it notices its parent's death), no process
of the install remains, nothing is left in $TMPDIR and no partial release in the cache.
Hermetic: the release list is a file:// fixture, and pip's index is a local server that accepts
connections and never answers, so that pip is caught mid-download.
A Python worker that trains (here FSDP2's: the torch trainrepro was built with, no DeepSpeed)
leaves nothing in $TMPDIR either: torch inductor's cache (/tmp/torchinductor_<user>) goes into
the worker's private folder.

Usage: check_nothing_left.py TRAINREPRO
"""
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCENARIO = "scenarios/accumulation/gas-missing.json"
RELEASE = "0.18.6"


def silent_index():
    """A server that accepts and never answers; returns its port and a list of connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    connections = []

    def accept():
        while True:
            connection, _ = server.accept()
            connections.append(connection)  # kept open, never answered

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1], connections


def processes_naming(text):
    """Pids of processes whose command line holds `text`."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def wait_for(condition, limit):
    """Polls until condition() is true or `limit` seconds pass (a bound, not a timing check)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def main():
    trainrepro = sys.argv[1]
    failures = []
    port, connections = silent_index()
    for name, stop in (("Ctrl-C", signal.SIGINT), ("kill -9 of trainrepro", signal.SIGKILL)):
        with tempfile.TemporaryDirectory(prefix="trainrepro-install-cleanup-") as folder:
            folder = pathlib.Path(folder)
            cache, temporary = folder / "cache", folder / "tmp"
            cache.mkdir(mode=0o700)
            temporary.mkdir()
            index = folder / "deepspeed.json"
            index.write_text(json.dumps({"releases": {
                RELEASE: [{"filename": f"deepspeed-{RELEASE}.tar.gz", "yanked": False}]}}))
            env = {k: v for k, v in os.environ.items() if k != "TRAINREPRO_OFFLINE"}
            # A download store of its own (XDG_CACHE_HOME): the machine's shared one may hold
            # the release's sdist, and the install would not wait on the silent index.
            env.update(TRAINREPRO_CACHE=str(cache), TRAINREPRO_PYPI_JSON=index.as_uri(),
                       TMPDIR=str(temporary), PIP_INDEX_URL=f"http://127.0.0.1:{port}/simple",
                       PIP_TIMEOUT="600", PIP_RETRIES="0",
                       XDG_CACHE_HOME=str(pathlib.Path(folder) / "xdg"))
            seen = len(connections)
            trainrepro_process = subprocess.Popen(
                [trainrepro, "run", SCENARIO, "--engine", f"deepspeed=={RELEASE}"], cwd=ROOT,
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if not wait_for(lambda: len(connections) > seen, 120):
                trainrepro_process.kill()
                failures.append(f"{name}: pip never asked the index:\n"
                                f"{trainrepro_process.communicate()[0].decode()}")
                continue
            install = processes_naming(str(folder))
            os.kill(trainrepro_process.pid, stop)
            output = trainrepro_process.communicate(timeout=120)[0].decode()
            # Stragglers: any process naming this case's folders (the installer, pip, a build).
            gone = wait_for(lambda: not processes_naming(str(folder)), 60)
            left_in_tmp = sorted(p.name for p in temporary.iterdir()
                                 if not (stop == signal.SIGKILL and
                                         p.name.startswith("trainrepro-ranks-")))
            left_in_cache = sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock"))
            if not install:
                failures.append(f"{name}: no install process was seen running")
            elif not gone:
                left = processes_naming(str(folder))
                for pid in left:
                    os.kill(pid, signal.SIGKILL)
                failures.append(f"{name}: the install outlived trainrepro: pids {left}")
            elif left_in_tmp:
                failures.append(f"{name}: left in $TMPDIR: {left_in_tmp}")
            elif left_in_cache:
                failures.append(f"{name}: left in the cache: {left_in_cache}")
            elif stop == signal.SIGINT and trainrepro_process.returncode not in (130, -2):
                failures.append(f"{name}: exit {trainrepro_process.returncode}, expected 130:\n"
                                f"{output}")
            else:
                print(f"ok  {name}: {len(install)} install processes ended, nothing left")
    with tempfile.TemporaryDirectory(prefix="trainrepro-worker-tmpdir-") as temporary:
        done = subprocess.run(
            [trainrepro, "run", "scenarios/accumulation/regression-mb-gas4-sgd.json", "--engine",
             "fsdp2"], cwd=ROOT, env=dict(os.environ, TMPDIR=temporary), capture_output=True,
            text=True, timeout=600)
        left = sorted(os.listdir(temporary))
        if done.returncode != 0:
            failures.append(f"FSDP2 worker: exit {done.returncode}:\n{done.stdout}{done.stderr}")
        elif left:
            failures.append(f"FSDP2 worker: left in $TMPDIR: {left}")
        else:
            print("ok  FSDP2 worker: nothing left in $TMPDIR")
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
