#!/usr/bin/env python3
"""`trainrepro export --python` keeps a scenario's text as data (issue 32, item 5).

A scenario's description was once written into the script's docstring: a description holding
`x\"\"\"` + newline + `import os; open("PWNED", "w").write("1")` + newline + `\"\"\"` closed the
docstring and the rest ran as code when the user ran the script. This test exports scenarios with
hostile text in every field that reaches the script (description, tags, reference, DeepSpeed
config keys and values, the scenario's file name) and checks, for each script:
  - export exits 0 (a refusal would prove nothing);
  - its syntax tree equals the tree of the benign scenario's script, except for the one string
    constant that EXPORTED reads (so every statement, docstring and comment-free token is the
    template's own);
  - that constant, read back with json.loads, is exactly the scenario file's JSON, its file name
    and the expectation: nothing was lost or rewritten on the way;
  - the script's data lines are printable ASCII;
  - run as a program (it stops at its world-size check, before torch is imported), it exits 2
    with the template's own message, and the file PWNED is never written.
Text that is not UTF-8 in a scenario, a name outside the name rule, and DeepSpeed settings that
make the real DeepSpeed act outside the run (import a module, write a file the config names, log
online) are refused cleanly: exit 2, a located message, no script written.

Usage: check_export_security.py TRAINREPRO BASE_SCENARIO
"""
import ast
import copy
import json
import os
import pathlib
import subprocess
import sys
import tempfile

# The exact injection of the issue, and a text holding every kind of trouble for a Python
# source: both triple quotes, quotes alone, a backslash before a newline and at the end, \N{…}
# and broken escapes, NUL and other control bytes, line and paragraph separators, a coding
# cookie, bidirectional controls, a BOM, astral characters, the template's own placeholders.
EXACT_INJECTION = 'x"""\nimport os; open("PWNED", "w").write("1")\n"""'
HOSTILE = ("'''\nopen('PWNED', 'w').write('1')\n'''" + EXACT_INJECTION +
           "\"; open('PWNED', 'w').write('1') #\\\n\\N{BULLET}\\N{\\x4\\u12\\U0001\\" +
           "\x00\x01\x1b[31m\x7f\r\n\r\u2028\u2029\x0c\x0b# -*- coding: rot13 -*-\n" +
           "\u202e\u2066\ufeff\ufffe\uffff\U0001f600 \u00e9 \\x00 {0} %s " +
           "__EXPORTED_DATA__ __ZOO_SOURCE__ __WORKER_SOURCE__ __VERSION__ ''' \"\"\" \\")


# DeepSpeed 0.19.8 settings that act outside the run (harness/scenario/settings_acting_outside_the_run.cpp, shared with run --engine deepspeed), with
# flags as Python reads them: 1 and "yes" are true too.
OUTSIDE_THE_RUN = [
    ({"torch_autocast": {"enabled": 1, "lower_precision_safe_modules": ["evil.Module"]}},
     "/torch_autocast/lower_precision_safe_modules"),
    ({"flops_profiler": {"enabled": True, "output_file": "/home/user/.bashrc"}},
     "/flops_profiler/output_file"),
    ({"autotuning": {"enabled": True}}, "/autotuning/enabled"),
    ({"tensorboard": {"enabled": "yes", "output_path": "/tmp/x"}}, "/tensorboard/enabled"),
    ({"csv_monitor": {"enabled": True}}, "/csv_monitor/enabled"),
    ({"wandb": {"enabled": True}}, "/wandb/enabled"),
    ({"comet": {"enabled": True}}, "/comet/enabled"),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme",
                                                          "nvme_path": "/tmp/n"}}},
     "/zero_optimization/offload_param/nvme_path"),
]
INSIDE_THE_RUN = [
    {"torch_autocast": {"enabled": False, "lower_precision_safe_modules": ["evil.Module"]}},
    {"flops_profiler": {"enabled": False, "output_file": "/home/user/.bashrc"}},
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu",
                                                             "nvme_path": "/local_nvme"}}},
]


def export(trainrepro, scenario_file, script, cwd):
    return subprocess.run([trainrepro, "export", os.fsencode(scenario_file), "--python", "-o",
                           os.fsencode(script)], capture_output=True, cwd=cwd, timeout=120)


def exported_call(tree):
    """The call json.loads(<one string constant>) assigned to EXPORTED, or None."""
    for statement in tree.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and
                isinstance(statement.targets[0], ast.Name) and
                statement.targets[0].id == "EXPORTED"):
            call = statement.value
            if (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords and
                    isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)):
                return call
    return None


def shape(source):
    """The script's syntax tree with the data constant blanked, and that constant."""
    tree = ast.parse(source)
    call = exported_call(tree)
    if call is None:
        return ast.dump(tree), None
    data = call.args[0].value
    call.args[0].value = "<data>"
    return ast.dump(tree), data


def data_lines(text):
    lines = text.splitlines()
    begin = lines.index("EXPORTED = json.loads(") + 1
    end = lines.index(")", begin)
    return lines[begin:end]


class Checker:
    def __init__(self, trainrepro, work):
        self.trainrepro, self.work, self.failures, self.count = trainrepro, work, [], 0
        self.runs_script = True  # run each exported script up to its world-size check

    def fail(self, what, message):
        self.failures.append(f"{what}: {message}")

    def export_ok(self, what, scenario_file, script_name, benign_shape, written):
        """Exports, checks the tree and the data, runs the script. `written`: the file's JSON."""
        self.count += 1
        folder = pathlib.Path(tempfile.mkdtemp(dir=self.work))
        script = folder / script_name
        done = export(self.trainrepro, scenario_file, script, folder)
        if done.returncode != 0:
            errors = done.stderr.decode(errors="replace")
            self.fail(what, f"export exited {done.returncode}: {errors}")
            return
        source = script.read_bytes()
        try:
            tree_shape, data = shape(source)
        except (SyntaxError, ValueError) as error:
            self.fail(what, f"the script does not parse: {error}")
            tree_shape, data = None, None
        if tree_shape is not None and tree_shape != benign_shape:
            self.fail(what, "the script's syntax tree differs from the template's (scenario text "
                            "became code or docstring text)")
        if data is None:
            self.fail(what, "no EXPORTED = json.loads('…') statement")
        else:
            self.check_data(what, data, written, scenario_file, source)
        self.run_script(what, script, folder)

    def check_data(self, what, data, written, scenario_file, source):
        expect = written["expect"]
        expected = {"scenario": written,
                    "source": os.fsencode(scenario_file).decode("utf-8", "replace"),
                    "expected": "pass (the gradients should agree)" if expect["outcome"] == "pass"
                                else "diagnosis " + expect["diagnosis"]}
        if json.loads(data) != expected:
            self.fail(what, "EXPORTED does not read back as the scenario file's JSON, its name "
                            f"and the expectation:\n{data[:2000]}")
        for line in data_lines(source.decode("utf-8", "replace")):
            if not all(32 <= ord(c) < 127 for c in line):
                self.fail(what, f"a data line is not printable ASCII: {line[:200]!r}")

    def run_script(self, what, script, folder):
        if not self.runs_script:
            return
        # WORLD_SIZE 99: the script stops at its world-size check, after every top-level
        # statement ran and before torch is imported, so it needs neither torch nor deepspeed.
        run = subprocess.run([sys.executable, str(script)], capture_output=True, cwd=folder,
                             env={**os.environ, "WORLD_SIZE": "99"}, timeout=120)
        if (folder / "PWNED").exists():
            self.fail(what, "running the exported script wrote PWNED: scenario text ran as code")
        if run.returncode != 2 or b"this reproduction runs on 1 rank(s), found WORLD_SIZE=99" \
                not in run.stdout:
            output = (run.stdout + run.stderr).decode(errors="replace")[-2000:]
            self.fail(what, f"the script did not stop at its world-size check (exit "
                            f"{run.returncode}):\n{output}")

    def refused(self, what, scenario_file, wanted):
        self.count += 1
        folder = pathlib.Path(tempfile.mkdtemp(dir=self.work))
        done = export(self.trainrepro, scenario_file, folder / "repro.py", folder)
        errors = done.stderr.decode(errors="replace")
        if done.returncode != 2 or wanted not in errors:
            self.fail(what, f"expected exit 2 and {wanted!r}, found exit {done.returncode}: "
                            f"{errors}")
        if os.listdir(folder):
            self.fail(what, f"a refused export wrote {os.listdir(folder)}")


def write_json(path, document):
    pathlib.Path(path).write_text(json.dumps(document, indent=2), encoding="utf-8")


def hostile_variants(base):
    """(what, scenario) with hostile text in one field each, and in all of them at once."""
    variants = []

    def variant(what, change):
        scenario = copy.deepcopy(base)
        change(scenario)
        variants.append((what, scenario))

    reference = {"url": "https://example.org/" + HOSTILE, "project": "deepspeed",
                 "affected": HOSTILE, "fixed": HOSTILE}
    variant("the issue's exact injection in the description",
            lambda s: s.update(description=EXACT_INJECTION))
    variant("hostile description", lambda s: s.update(description=HOSTILE))
    variant("description ending in a backslash", lambda s: s.update(description="x\\"))
    variant("description ending in a quote", lambda s: s.update(description="x'"))
    variant("hostile tags", lambda s: s.update(tags=[HOSTILE, "\\", "'''", '"""']))
    variant("hostile reference", lambda s: s.update(reference=reference))
    variant("hostile DeepSpeed config key and value",
            lambda s: s["deepspeed"].update({HOSTILE: HOSTILE, "x": [HOSTILE, {HOSTILE: "\\"}]}))

    def everything(s):
        s.update(description=HOSTILE, tags=[HOSTILE], reference=reference)
        s["deepspeed"][HOSTILE] = HOSTILE
    variant("hostile text in every field at once", everything)
    return variants


def main():
    trainrepro, base_file = os.path.abspath(sys.argv[1]), sys.argv[2]
    base = json.loads(pathlib.Path(base_file).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as work:
        checker = Checker(trainrepro, work)
        benign_file = os.path.join(work, "benign.json")
        write_json(benign_file, base)
        folder = pathlib.Path(tempfile.mkdtemp(dir=work))
        done = export(trainrepro, benign_file, folder / "repro.py", folder)
        if done.returncode != 0:
            print(f"the benign scenario did not export: {done.stderr.decode(errors='replace')}")
            return 1
        benign_shape, _ = shape((folder / "repro.py").read_bytes())

        for index, (what, scenario) in enumerate(hostile_variants(base)):
            file = os.path.join(work, f"hostile-{index}.json")
            write_json(file, scenario)
            checker.export_ok(what, file, "repro.py", benign_shape, scenario)

        # The scenario's and the script's file names reach the script too: quotes, a newline,
        # a backslash, and bytes that are not UTF-8 (a Linux file name is bytes).
        for index, name in enumerate(['x"""\nimport os; open("PWNED", "w").write("1")\n""".json',
                                      "'''\\\n\\N{x}.json",
                                      os.fsdecode(b"\xff\xfe'''\xc3(.json")]):
            file = os.path.join(work, f"name-{index}", name)
            os.makedirs(os.path.dirname(file))
            write_json(file, base)
            checker.export_ok(f"hostile scenario file name {name!r}", file,
                              name.replace(".json", ".py"), benign_shape, base)

        # Refused cleanly, nothing written: text that is not UTF-8, a hostile name.
        not_utf8 = os.path.join(work, "not-utf8.json")
        pathlib.Path(not_utf8).write_bytes(json.dumps(base).encode("utf-8").replace(
            b'"description": "', b'"description": "\xff\xfe\xc3('))
        checker.refused("description that is not UTF-8", not_utf8, "invalid JSON")
        bad_name = os.path.join(work, "bad-name.json")
        write_json(bad_name, {**base, "name": EXACT_INJECTION})
        checker.refused("hostile name", bad_name, "bad-name.json:/name: expected lowercase letters")

        # DeepSpeed settings that act outside the run (import code, write where the config
        # says, go online) are refused; the same blocks that leave them off still export.
        for index, (settings, pointer) in enumerate(OUTSIDE_THE_RUN):
            file = os.path.join(work, f"outside-{index}.json")
            write_json(file, {**base, "deepspeed": {**base["deepspeed"], **settings}})
            checker.refused(f"DeepSpeed setting {pointer}", file,
                            f":/deepspeed{pointer}: DeepSpeed")
        for index, settings in enumerate(INSIDE_THE_RUN):
            file = os.path.join(work, f"inside-{index}.json")
            scenario = {**base, "deepspeed": {**base["deepspeed"], **settings}}
            write_json(file, scenario)
            checker.export_ok(f"DeepSpeed settings {settings}", file, "repro.py", benign_shape,
                              scenario)

    for failure in checker.failures:
        print("FAILED " + failure)
    print(f"{checker.count} exports checked, {len(checker.failures)} failure(s)")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
