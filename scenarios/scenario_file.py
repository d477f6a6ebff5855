"""How every scenarios/*/generate.py writes a scenario file: the same JSON layout (two-space
indent, keys in the order given, one newline at the end), so a generator re-run leaves unchanged
files byte-identical, and one tag and key order for the themed folders' scenarios.

A generator imports it from the folder above its own:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from scenario_file import write, write_body
"""
import json


def write_body(folder, body):
    """Writes body to folder/<body's name>.json."""
    (folder / f"{body['name']}.json").write_text(json.dumps(body, indent=2) + "\n")


def outcome_tags(theme, expect, world, tags=()):
    """A themed folder's tags: the theme, whether the scenario reproduces a bug or guards its fix,
    the generator's own tags, and multi-rank when it needs more than one rank."""
    kind = "reproduction" if expect.get("outcome") != "pass" else "regression-test"
    return [theme, kind, *tags] + (["multi-rank"] if world > 1 else [])


def write(folder, theme, name, description, expect, *, model, data, deepspeed, golden, world=1,
          dtype=None, loop=None, memory=None, version=None, parameter_groups=None,
          client_optimizer=None, tags=()):
    """Writes one scenario of a themed folder; a field left None (loop, version and
    client_optimizer also when empty) is left out of the file."""
    body = {
        "name": name,
        "description": description,
        "tags": outcome_tags(theme, expect, world, tags),
        "model": model,
        "data": data,
        "deepspeed": deepspeed,
    }
    optional = (("deepspeed_version", version or None), ("parameter_groups", parameter_groups),
                ("world_size", world), ("dtype", dtype),
                ("client_optimizer", client_optimizer or None), ("loop", loop or None),
                ("memory", memory))
    body.update((key, value) for key, value in optional if value is not None)
    body["golden"] = golden
    body["expect"] = expect
    write_body(folder, body)
