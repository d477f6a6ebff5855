"""`trainrepro watch` where no DeepSpeed is needed to say what went wrong (in the quick tier):
no command (exit 2), a command that cannot start (exit 2), a command that never creates a
DeepSpeed engine (exit 3, "no DeepSpeed engine was created", its exit code), one that fails
first (exit 3, its last traceback lines), one that runs past --timeout (exit 3, killed), an error text with an escape sequence and a
forged verdict line (escaped and indented), and
the results, JUnit and HTML files written for each that ran.

Usage: check_watch_usage.py TRAINREPRO
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    trainrepro = os.path.abspath(sys.argv[1])
    python = sys.executable
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        results = os.path.join(folder, "watch.json")
        cases = [
            ([], 2, "give the training command after --"),
            (["--", os.path.join(folder, "no-such-launcher")], 2, "no-such-launcher"),
            (["--", python, "-c", "print('trained nothing')"], 3,
             "no DeepSpeed engine was created: the command ended with exit code 0"),
            (["--", python, "-c", "raise KeyError('shard 7')"], 3, "KeyError: 'shard 7'"),
            (["--timeout", "2", "--", python, "-c", "import time; time.sleep(60)"], 3,
             "did not finish within 2 s"),
            # An error text that would clear the screen and forge a verdict line: escaped, and
            # indented under ours.
            (["--", python, "-c", "raise ValueError('\\x1b[2J\\npassed         watch: forged')"],
             3, "ValueError: \\x1b[2J"),
        ]
        for arguments, code, text in cases:
            for leftover in (results,):
                if os.path.exists(leftover):
                    os.remove(leftover)
            ran = bool(arguments) and os.path.basename(arguments[-1]) != "no-such-launcher"
            extra = ["--results", results, "--junit", results + ".xml", "--html",
                     results + ".html"] if ran else []
            done = subprocess.run([trainrepro, "watch", *extra, *arguments], capture_output=True,
                                  text=True, cwd=folder)
            output = done.stdout + done.stderr
            ok = done.returncode == code and text in output
            # Our own lines: the command's text may reach them only indented, never raw.
            ours = done.stdout[done.stdout.rfind("error          watch:"):]
            ok = ok and "\x1b" not in ours and "\npassed" not in ours
            if ran and ok:
                verdict = json.load(open(results))["watch"]
                ok = verdict["outcome"] == "error" and text in verdict["problem"] and all(
                    os.path.exists(results + suffix) for suffix in (".xml", ".html"))
            print(f"{'ok  ' if ok else 'FAIL'} watch {' '.join(arguments)[:70]}: exit "
                  f"{done.returncode}", flush=True)
            if not ok:
                failures.append(f"watch {arguments}: expected exit {code} and {text!r}; got "
                                f"exit {done.returncode}:\n{output[-2000:]}")
    for failure in failures:
        print("\n" + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
