"""What the watch leaves for trainrepro when its K windows are recorded or the process exits:
rank<R>.json and rank<R>.safetensors, and for --save-scenario the model (TorchScript) and the
samples. A mixin of Watcher (trainrepro_watch_watcher.py)."""
import json
import os
import platform

from trainrepro_watch_files import _json_safe, _write_atomically, _write_safetensors_atomically
from trainrepro_watch_settings import FORMAT, FORMAT_VERSION
from trainrepro_watch_tensors import _size


class WatchOutput:
    """Watcher's methods that write what it recorded (they read its state)."""

    def _samples_to_save(self, tensors):
        """--save-scenario: each micro-step's input and target into the rank's tensors, or why a
        scenario cannot hold them ("" when it can)."""
        for w, window in enumerate(self.windows):
            for i, micro in enumerate(window["micro_steps"]):
                args, kwargs = micro["args"], micro["kwargs"]
                if kwargs or len(args) != 1 or not isinstance(args[0], self._torch.Tensor):
                    return ("the forward takes more than one tensor (a scenario's model takes "
                            "one input tensor)")
                loss = micro["loss_function"]
                if loss is None or loss["output"]:
                    return "the loss is not a torch.nn.functional loss of the forward's output"
                if loss["label_smoothing"] or loss["weighted"]:
                    return ("the loss has label smoothing or class weights, which a scenario's "
                            "loss does not have")
                tensors[f"window{w}/micro{i}/inputs"] = args[0]
                tensors[f"window{w}/micro{i}/targets"] = loss["target"]
        return ""

    def _save_model(self):
        """--save-scenario: the model at the first window's start weights, traced to TorchScript
        (rank<R>.model.pt); why not when it does not trace."""
        import copy
        if self.zero_stage == 3:
            return ("ZeRO stage 3 partitions the module's parameters: the model is not traced "
                    "there yet")
        try:
            model = copy.deepcopy(self.engine.module).float()
            named = dict(model.named_parameters())
            with self._torch.no_grad():
                for (name, _), weight in zip(self.named, self.windows[0]["start"]):
                    named[name].copy_(weight)
            example = self.windows[0]["micro_steps"][0]["args"][0]
            traced = self._torch.jit.trace(model.eval(), (example,), check_trace=False)
            traced.save(os.path.join(self.folder, f"rank{self.rank}.model.pt"))
        except Exception as error:  # noqa: BLE001: the verdict says why, nothing is saved
            return f"the model does not trace to TorchScript: {error}"
        return ""

    def _write(self, ended):
        if self.finished:
            return
        self.finished = True
        for hook in self._module_hooks:
            hook.remove()
        self._torch.Tensor.backward = self._tensor_backward
        tensors, windows = {}, []
        golden_error = self.golden_not_computed
        for w, window in enumerate(self.windows):
            names = [n for n, _ in self.named]
            for name, g in zip(names, window["run_gradients"]):
                tensors[f"window{w}/run/{name}"] = g
            pieces, golden = (window["pieces"], window["golden"]) if not golden_error \
                else ([], None)
            micro_steps = []
            for i, micro in enumerate(window["micro_steps"]):
                entry = {"loss": micro["loss"],
                         "scale_wrt_gas": micro.get("scale_wrt_gas", True),
                         "labels_counted": micro["labels_counted"],
                         "loss_function": None if micro["loss_function"] is None else {
                             k: v for k, v in micro["loss_function"].items() if k != "target"}}
                if i < len(pieces):
                    entry.update(items=pieces[i]["items"], loss_sum=pieces[i]["loss_sum"],
                                 self_check=pieces[i]["self_check"])
                    if "own_check" in pieces[i]:
                        entry["own_check"] = pieces[i]["own_check"]
                    for name, g in zip(names, pieces[i]["gradients"]):
                        tensors[f"window{w}/micro{i}/{name}"] = g
                    for name, g in zip(names, pieces[i].get("twin_gradients", [])):
                        tensors[f"window{w}/twin{i}/{name}"] = g
                micro_steps.append(entry)
            windows.append({"micro_steps": micro_steps, "closed_by": window["closed_by"],
                            "calls_at_close": window["calls_at_close"], "golden": golden})
        save_not_possible = ""
        if self.save:
            save_not_possible = self._samples_to_save(tensors)
            if not save_not_possible and self.rank == 0:
                save_not_possible = self._save_model()
        engine = self.engine
        record = {
            "format": FORMAT, "version": FORMAT_VERSION, "rank": self.rank,
            "world_size": self.world_size, "ended": ended,
            "versions": {"deepspeed": self._deepspeed.__version__,
                         "torch": self._torch.__version__.split("+")[0],
                         "python": platform.python_version()},
            "config": _json_safe(getattr(getattr(engine, "_config", None), "_param_dict", None)),
            "resolved": {"train_batch_size": engine.train_batch_size(),
                         "train_micro_batch_size_per_gpu":
                             engine.train_micro_batch_size_per_gpu(),
                         "gradient_accumulation_steps": engine.gradient_accumulation_steps(),
                         "gradient_clipping": float(engine.gradient_clipping() or 0.0),
                         "zero_stage": self.zero_stage,
                         "dtype": str(next(engine.module.parameters()).dtype).replace(
                             "torch.", ""),
                         "grad_accum_dtype": self._grad_accum_dtype()},
            "parameter_names": [n for n, _ in self.named],
            "calls": self.calls,
            "windows": windows,
            "golden_not_computed": golden_error,
            "golden_kind": self.golden_kind,
            "coordinates": {"judged": [len(c) if c is not None else _size(s)
                                       for c, s in zip(self.coordinates, self._shapes())],
                            "of": [_size(s) for s in self._shapes()]},
            "steps_wanted": self.steps_wanted,
            "memory_steps": self.memory_steps,
            "config_given": _json_safe(self.config_given),
            "save_not_possible": save_not_possible,
        }
        prefix = os.path.join(self.folder, f"rank{self.rank}")
        _write_safetensors_atomically(prefix + ".safetensors", tensors)
        _write_atomically(prefix + ".json", json.dumps(record).encode())
        self.windows = []
