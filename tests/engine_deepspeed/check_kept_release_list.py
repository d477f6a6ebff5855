"""The release list kept in the download store (python/trainrepro_worker/kept_release_list.py),
through the installer's own install_once with the pip-and-build part stood in for (it writes the
stamp) and every read of the index counted:

- a second install into a fresh cache reads no index: the first one's list, kept in the store,
  answers, even with the index's file gone;
- a release the kept list lacks (a newer one), or marks yanked, and a kept list older than a day
  are fetched again;
- a kept list that is truncated, of another shape, a FIFO, a folder or too big is refused,
  naming the file, and fetched again; with the index unreachable it is not trusted either;
- an index that cannot be reached (a local HTTP server, stopped) lets an install the kept list
  names go on, saying so in one line on stderr, and one it does not name fails as before;
- the list is kept per index URL (TRAINREPRO_PYPI_JSON): one index's list never answers for
  another, and a mirror's password is not part of the file's name.
No network, no pip, no DeepSpeed.

Usage: check_kept_release_list.py
"""
import contextlib
import functools
import http.server
import io
import json
import os
import pathlib
import stat
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "python" / "trainrepro_worker"))
from checklist import Checklist  # noqa: E402  (this folder: the checks and their summary)
import install_release  # noqa: E402
import kept_release_list  # noqa: E402
import release_index  # noqa: E402

INDEX = {"releases": {
    "0.18.4": [{"filename": "deepspeed-0.18.4.tar.gz", "yanked": False}],
    "0.18.5": [{"filename": "deepspeed-0.18.5.tar.gz", "yanked": True}],
    "0.18.6": [{"filename": "deepspeed-0.18.6.tar.gz", "yanked": False}],
}}
NEWER = {"releases": dict(INDEX["releases"], **{
    "0.19.0": [{"filename": "deepspeed-0.19.0.tar.gz", "yanked": False}]})}
A_DAY_AND_AN_HOUR = 25 * 3600


class Installer:
    """install_once as trainrepro runs it, into a fresh cache each time, sharing one store."""

    def __init__(self, folder, store):
        self.folder, self.store, self.caches, self.index_reads = folder, store, 0, 0
        fetch = kept_release_list.fetch_releases

        def counted_fetch(url):
            self.index_reads += 1
            return fetch(url)
        kept_release_list.fetch_releases = counted_fetch
        install_release.install = self.stand_in_install

    @staticmethod
    def stand_in_install(version, home, downloads=None):
        os.makedirs(home)
        install_release.write_stamp(home, version, 0)

    def install(self, version):
        """(exit code, stderr, index reads) of one install into a cache of its own."""
        self.caches += 1
        home = self.folder / f"cache-{self.caches}" / f"deepspeed-{version}"
        home.parent.mkdir()
        reads, stderr, code = self.index_reads, io.StringIO(), 0
        kept_tmpdir = (os.environ.get("TMPDIR"), tempfile.tempdir)
        try:
            with contextlib.redirect_stderr(stderr):
                install_release.install_once(version, str(home), str(self.store))
        except SystemExit as exit:
            code = exit.code
        finally:  # install_once makes HOME.tmp the TMPDIR, then removes it
            os.environ.pop("TMPDIR", None)
            if kept_tmpdir[0] is not None:
                os.environ["TMPDIR"] = kept_tmpdir[0]
            tempfile.tempdir = kept_tmpdir[1]
        return code, stderr.getvalue(), self.index_reads - reads


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *arguments):
        pass


def serve(folder):
    """A local HTTP index serving `folder`; stop it and the same URL cannot be reached."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    checks = Checklist("kept release list")
    expect = checks.expect
    os.environ.pop("TRAINREPRO_OFFLINE", None)
    os.environ["no_proxy"] = "127.0.0.1"  # the local index below is not behind a proxy

    with tempfile.TemporaryDirectory(prefix="trainrepro-kept-release-list-") as folder:
        folder = pathlib.Path(folder)
        store = folder / "pip-downloads"
        index = folder / "index.json"
        index.write_text(json.dumps(INDEX))
        os.environ[release_index.VARIABLE] = index.as_uri()
        installer = Installer(folder, store)
        kept = pathlib.Path(kept_release_list.kept_list_path(str(store), index.as_uri()))

        # (1) The first install reads the index and keeps its list; the next ones do not.
        code, said, reads = installer.install("0.18.4")
        expect(code == 0 and reads == 1 and kept.is_file(),
               f"the first install reads the index once and keeps its list in {kept.name}")
        expect(stat.S_IMODE(os.stat(store).st_mode) == 0o700
               and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
               and not [p.name for p in store.iterdir() if p.name.endswith(".partial")],
               "the kept list is 0600 in the 0700 store, no temporary file left")
        expect(release_index.releases_in(kept.read_bytes(), "kept") ==
               release_index.fetch_releases(index.as_uri()),
               "the kept list, read through release_index's checks, is the index's answer")
        index.rename(folder / "index-gone.json")
        code, said, reads = installer.install("0.18.4")
        expect(code == 0 and reads == 0 and said == "",
               "a second install into a fresh cache reads no index (its file gone), quietly")
        code, said, reads = installer.install("0.18.6")
        expect(code == 0 and reads == 0, "another release the kept list names reads no index")

        # (2) A release the kept list lacks or marks yanked, or a list a day old, is fetched.
        code, said, reads = installer.install("0.19.0")
        expect(code == 2 and reads == 1 and "cannot open" in said,
               "a release missing from the kept list asks the index (here gone: exit 2)")
        index.write_text(json.dumps(NEWER))
        code, said, reads = installer.install("0.19.0")
        expect(code == 0 and reads == 1 and '"0.19.0"' in kept.read_text(),
               "a newer release is fetched, installed, and the kept list then names it")
        code, said, reads = installer.install("0.18.5")
        expect(code == 2 and reads == 1 and "was yanked" in said,
               "a release the kept list marks yanked asks the index again (still yanked)")
        os.utime(kept, (time.time() - A_DAY_AND_AN_HOUR,) * 2)
        code, said, reads = installer.install("0.18.4")
        expect(code == 0 and reads == 1 and time.time() - kept.stat().st_mtime < 600,
               "a kept list older than a day is fetched again and kept anew")

        # (3) A kept list that fails the checks is refused, naming it, and fetched again.
        valid = kept.read_bytes()
        corruptions = {
            "truncated JSON": lambda: kept.write_bytes(valid[:len(valid) // 2]),
            "a list of releases": lambda: kept.write_text('{"releases": ["0.18.4"]}'),
            "yanked as a string": lambda: kept.write_text(
                '{"releases": {"0.18.4": [{"yanked": "no"}]}}'),
            "too big": lambda: kept.write_bytes(b" " * (release_index.MAX_BYTES + 1)),
            "a FIFO": lambda: (kept.unlink(), os.mkfifo(kept)),
        }
        for name, corrupt in corruptions.items():
            corrupt()
            code, said, reads = installer.install("0.18.4")
            expect(code == 0 and reads == 1 and f"the release list kept in {kept}:" in said
                   and "refused; fetching the list again" in said
                   and release_index.releases_in(kept.read_bytes(), "kept") ==
                   release_index.fetch_releases(index.as_uri()),
                   f"a kept list that is {name} is refused naming the file, fetched again "
                   "and kept whole")
        kept.unlink()
        kept.mkdir()
        code, said, reads = installer.install("0.18.4")
        expect(code == 0 and reads == 1 and "found a directory" in said
               and f"cannot keep the release list in {kept}" in said,
               "a folder where the kept list goes is refused; the install goes on, saying the "
               "list could not be kept")
        kept.rmdir()

        # An index that cannot be reached: the kept list, when it names the release and passes
        # the checks, lets the install go on, and says so.
        server = serve(folder)
        url = f"http://127.0.0.1:{server.server_address[1]}/index.json"
        os.environ[release_index.VARIABLE] = url
        served = pathlib.Path(kept_release_list.kept_list_path(str(store), url))
        code, said, reads = installer.install("0.18.4")
        expect(code == 0 and reads == 1 and served.is_file() and served != kept,
               "an HTTP index's list is kept in a file of its own")
        server.shutdown()
        server.server_close()
        os.utime(served, (time.time() - A_DAY_AND_AN_HOUR,) * 2)
        code, said, reads = installer.install("0.18.4")
        lines = said.splitlines()
        expect(code == 0 and reads == 1 and len(lines) == 1
               and "cannot reach the package index" in lines[0]
               and f"going on with the release list kept in {served}" in lines[0],
               "with the index unreachable, a release the kept list names installs, said in one "
               "line on stderr")
        code, said, reads = installer.install("0.19.9")
        expect(code == 3 and "cannot reach the package index" in said,
               "with the index unreachable, a release the kept list lacks fails (exit 3)")
        served.write_text('{"releases": {"0.18.4": [{"yanked": false}]')
        code, said, reads = installer.install("0.18.4")
        expect(code == 3 and f"the release list kept in {served}:" in said
               and "going on" not in said,
               "with the index unreachable, a truncated kept list is refused, not trusted "
               "(exit 3)")

        # Kept per index URL.
        os.environ[release_index.VARIABLE] = (folder / "elsewhere.json").as_uri()
        code, said, reads = installer.install("0.18.4")
        expect(code == 2 and reads == 1 and "cannot open" in said,
               "one index's kept list does not answer for another URL")
        with_password = kept_release_list.kept_list_path(
            str(store), "https://user:s3cret@mirror.example/deepspeed/json")
        expect(with_password == kept_release_list.kept_list_path(
                   str(store), "https://mirror.example/deepspeed/json")
               and "s3cret" not in with_password
               and with_password != kept_release_list.kept_list_path(
                   str(store), release_index.DEFAULT_INDEX),
               "a mirror's list is keyed without its password, apart from PyPI's")

    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
