"""Whether an installed DeepSpeed release imports, and if not, why, for install_release.py.

The answer comes back in a JSON file, never on stdout: a release may log on import (0.17.5
prints `[INFO] ... Setting ds_accelerator to cpu` there), and a word count or a marker line on
stdout is at the mercy of whatever else is printed. When the release does not import, the
reason is the exception's last line (`ImportError: cannot import name ...`), or, when the
process died before it could write one (a signal, a crash in native code), how it ended and
the tail of what it printed; never an empty reason.
"""
import json
import os
import signal
import sys

# Run as `python -c IMPORT_PROBE ANSWER_FILE`: writes {"deepspeed", "deepspeed_file",
# "torch_file"} or {"error": the exception's last line}, atomically.
IMPORT_PROBE = r"""import json, os, sys, traceback
answer = sys.argv[1]
try:
    import torch
    import deepspeed
    found = {"deepspeed": str(deepspeed.__version__), "deepspeed_file": deepspeed.__file__,
             "torch_file": torch.__file__}
except BaseException as error:
    found = {"error": traceback.format_exception_only(type(error), error)[-1].strip()}
with open(answer + ".partial", "w") as file:
    json.dump(found, file)
os.replace(answer + ".partial", answer)
"""

OUTPUT_LINES_SHOWN = 8


def output_tail(output, lines=OUTPUT_LINES_SHOWN):
    """The last `lines` non-empty lines of what the probe printed."""
    kept = [line for line in output.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def how_it_ended(returncode):
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"it was killed by {name}"
    return f"it exited with code {returncode}"


def read_answer(path):
    """The probe's JSON object, or None when it wrote none (or not a JSON object)."""
    try:
        with open(path) as file:
            answer = json.load(file)
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None


def import_failure(answer, returncode, output):
    """Why the release does not import, in one message that is never empty; None when it does.
    answer: the probe's JSON object or None; output: stdout and stderr together."""
    if answer is not None and "error" not in answer and returncode == 0:
        missing = [key for key in ("deepspeed", "deepspeed_file", "torch_file")
                   if not isinstance(answer.get(key), str)]
        if not missing:
            return None
        return f"the import probe's answer lacks {', '.join(missing)}: {json.dumps(answer)[:300]}"
    tail = output_tail(output)
    if answer is not None and isinstance(answer.get("error"), str) and answer["error"]:
        reason = answer["error"]
        return reason + (f"\nits output ended with:\n{tail}" if tail else "")
    ended = how_it_ended(returncode) if returncode != 0 else "it exited with code 0"
    return (f"{ended} before answering" +
            (f"; its output ended with:\n{tail}" if tail else ", and printed nothing"))


def check_import(run, python, env, answer_path):
    """Runs the probe with `run` (install_guard.run_guarded's signature) and returns
    (answer, None) when the release imports, else (None, reason)."""
    if os.path.exists(answer_path):
        os.remove(answer_path)
    result = run([python, "-c", IMPORT_PROBE, answer_path], env=env)
    answer = read_answer(answer_path)
    reason = import_failure(answer, result.returncode, result.stdout)
    return (answer, None) if reason is None else (None, reason)


if __name__ == "__main__":
    sys.exit("import_check.py is a module of install_release.py")
