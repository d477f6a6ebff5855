"""The memory census at boundaries, for the first M optimizer steps (TRAINREPRO_WATCH_MEMORY_STEPS):
memory_census.py's, the watch's own records left out, written as rank<R>.memory.json. A mixin of
Watcher (trainrepro_watch_watcher.py)."""
import json
import os

from trainrepro_watch_files import _write_atomically
from trainrepro_watch_tensors import _tensors_in


class MemoryCensus:
    """Watcher's methods that sample and write the memory census (they read its state)."""

    def _own_tensors(self):
        """The watch's records, never the training's memory."""
        yield from (c for c in self.coordinates if c is not None)
        yield from self._coordinates_on_device.values()
        for window in self.windows + ([self.window] if self.window else []):
            yield from window.get("start") or []
            yield from window.get("run_gradients", [])
            for piece in window.get("pieces") or []:
                yield from piece["gradients"]
                yield from piece.get("twin_gradients", [])
            for micro in window["micro_steps"]:
                for value in (micro["args"], micro["kwargs"]):
                    yield from (t for _, t in _tensors_in(value))
                if micro["loss_function"] is not None and \
                        micro["loss_function"]["target"] is not None:
                    yield micro["loss_function"]["target"]

    def _record(self):
        """What the watch keeps for itself is left out of the host heap the census reads."""
        import contextlib
        return self.census.record_of_harness() if self.census else contextlib.nullcontext()

    def _sample_memory(self):
        if self.census is None:
            return
        steps = int(self.engine.global_steps)
        self.census.sample("boundary", int(self.engine.micro_steps), steps)
        if steps >= self.memory_steps:
            self._write_memory()

    def _write_memory(self):
        census, self.census = self.census, None
        if census is None:
            return
        # Every census here runs inside the user's loop, where the tensors of the step in progress
        # (its batch, outputs, loss) are alive by definition: only steps that ended before the
        # last boundary can leave survivors, so the last boundary's sample is left out (the
        # reference engine and `run --engine deepspeed` sample after those tensors are gone).
        memory = census.result()
        boundaries = [i for i, s in enumerate(memory["samples"]) if s["point"] == "boundary"]
        if boundaries:
            del memory["samples"][boundaries[-1]:]
        path = os.path.join(self.folder, f"rank{self.rank}.memory.json")
        _write_atomically(path, json.dumps(memory).encode())
