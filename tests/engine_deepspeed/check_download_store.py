"""The installer's download store (python/trainrepro_worker/download_store.py), with pip stood in
for by functions that record what they were asked:

- a release's sdist already in the store is used as it is: pip is not asked to download it;
- a missing sdist is downloaded once, moved into the store whole, and found there next time;
- requirements install from the store alone (--no-index --find-links STORE); only when that
  fails are they downloaded into the store, then installed from it;
- the store is created 0700 (it is the user's own, as the cache is).
No network, no pip, no DeepSpeed.

Usage: check_download_store.py
"""
import os
import pathlib
import stat
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "python" / "trainrepro_worker"))
from checklist import Checklist  # noqa: E402  (this folder: the checks and their summary)
import download_store  # noqa: E402


class StandInPip:
    """Records pip's arguments; `download` writes the sdist it is asked for; `install` succeeds
    only from a store that holds every requirement named."""

    def __init__(self, store):
        self.store, self.asked = store, []

    def run(self, *arguments):
        self.asked.append(arguments)
        if arguments[0] == "download":
            folder = arguments[arguments.index("-d") + 1]
            for name in arguments[1:]:
                if name.startswith("deepspeed=="):
                    (pathlib.Path(folder) / f"deepspeed-{name[11:]}.tar.gz").write_bytes(b"sdist")
                elif not name.startswith(("-", ":")) and name != folder:
                    (pathlib.Path(folder) / f"{name}-1.0-py3-none-any.whl").write_bytes(b"wheel")
            return subprocess.CompletedProcess(arguments, 0, "", "")
        wanted = [a for a in arguments[arguments.index(self.store) + 1:]]
        held = all((pathlib.Path(self.store) / f"{name}-1.0-py3-none-any.whl").exists()
                   for name in wanted)
        return subprocess.CompletedProcess(arguments, 0 if held else 1, "", "")

    def must_succeed(self, *arguments):
        if self.run(*arguments).returncode != 0:
            raise AssertionError(f"pip {arguments} failed")

    def downloads(self):
        return [a for a in self.asked if a[0] == "download"]


def fail(code, message):
    raise AssertionError(f"fail({code}): {message}")


def main():
    checks = Checklist("download store")
    expect = checks.expect

    with tempfile.TemporaryDirectory(prefix="trainrepro-download-store-") as folder:
        folder = pathlib.Path(folder)
        store = download_store.store_folder(str(folder / "cache" / "deepspeed-0.17.5"),
                                            str(folder / "downloads"))
        expect(stat.S_IMODE(os.stat(store).st_mode) == 0o700, "the store is created 0700")
        expect(download_store.store_folder(str(folder / "cache" / "deepspeed-0.17.5")) ==
               str(folder / "cache" / "pip-downloads"),
               "without a store named, it is pip-downloads beside the release")

        pip = StandInPip(store)
        scratch = folder / "scratch"
        scratch.mkdir()
        sdist, fetched = download_store.sdist_from_store(store, "0.17.5", str(scratch),
                                                         pip.must_succeed, fail)
        expect(fetched and sdist == os.path.join(store, "deepspeed-0.17.5.tar.gz")
               and os.path.isfile(sdist) and not any(scratch.iterdir()),
               "a missing sdist is downloaded and moved into the store whole")
        sdist, fetched = download_store.sdist_from_store(store, "0.17.5", str(scratch),
                                                         pip.must_succeed, fail)
        expect(not fetched and len(pip.downloads()) == 1,
               "a stored sdist is used again without a download")

        target = str(folder / "deps")
        fetched = download_store.install_from_store(store, target, ["hjson", "tqdm"], pip.run,
                                                    pip.must_succeed)
        installs = [a for a in pip.asked if a[0] == "install"]
        expect(fetched and len(pip.downloads()) == 2 and len(installs) == 2
               and all("--no-index" in a and store in a for a in installs),
               "requirements missing from the store are downloaded into it, then installed "
               "from it with --no-index")
        before = len(pip.asked)
        fetched = download_store.install_from_store(store, target, ["hjson", "tqdm"], pip.run,
                                                    pip.must_succeed)
        expect(not fetched and len(pip.asked) == before + 1 and len(pip.downloads()) == 2,
               "a second install of the same requirements fetches nothing")

    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
