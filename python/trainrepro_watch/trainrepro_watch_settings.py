"""What every part of the watch shares in one watched process: what trainrepro told it (the
TRAINREPRO_WATCH_* environment), the format of what it writes, the engines it watches and the
loss functions it wrapped, and which rank it is."""
import os


FORMAT = "trainrepro-watch"
FORMAT_VERSION = 1

_watchers = []          # the engines being watched in this process (one, normally)
_loss_originals = {}    # torch.nn.functional name -> the function it had


def _settings():
    return {"dir": os.environ["TRAINREPRO_WATCH_DIR"],
            "steps": int(os.environ.get("TRAINREPRO_WATCH_STEPS", "4")),
            "save": os.environ.get("TRAINREPRO_WATCH_SAVE") == "1",
            "loss": os.environ.get("TRAINREPRO_WATCH_LOSS", "auto"),
            "memory_steps": int(os.environ.get("TRAINREPRO_WATCH_MEMORY_STEPS", "0")),
            "golden": os.environ.get("TRAINREPRO_WATCH_GOLDEN", "own"),
            "coordinates": int(os.environ.get("TRAINREPRO_WATCH_COORDINATES",
                                              str(_DEFAULT_COORDINATES)))}


# How many gradient coordinates a window is judged on (--coordinates; 0: all of them). Every
# hypothesis is a fixed combination of the micro-steps' gradients, the same on every coordinate,
# so a sample judges it as the whole does; 2^18 float64 coordinates are 2 MiB per gradient kept,
# whatever the model's size.
_DEFAULT_COORDINATES = 1 << 18


def _rank_and_world():
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
