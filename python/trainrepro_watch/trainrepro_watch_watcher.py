"""The watched engine (trainrepro_watch.py describes what is recorded): its patched calls, each
micro-step's forward, loss and backward, and each window's boundary, where the memory census is
sampled (trainrepro_watch_memory.py), the golden's pieces are taken (trainrepro_watch_golden.py)
and, after the K windows, the records written (trainrepro_watch_output.py)."""
import atexit
import functools

from trainrepro_watch_golden import GoldenAtBoundary
from trainrepro_watch_memory import MemoryCensus
from trainrepro_watch_output import WatchOutput
from trainrepro_watch_settings import _rank_and_world, _settings
from trainrepro_watch_tensors import (_as_returned, _cast_of, _coordinates_judged, _map_tensors,
                                      _other_loss_terms, _tensors_in)


class Watcher(MemoryCensus, GoldenAtBoundary, WatchOutput):
    def __init__(self, initialized, deepspeed, config_given=None):
        import torch
        self._torch = torch
        self._deepspeed = deepspeed
        engine, optimizer, _, scheduler = (tuple(initialized) + (None,) * 4)[:4]
        self.engine = engine
        self.rank, self.world_size = _rank_and_world()
        settings = _settings()
        self.folder, self.steps_wanted = settings["dir"], settings["steps"]
        self.save, self.config_given = settings["save"], config_given
        self.loss_kind = settings["loss"]
        self.golden_kind = settings["golden"]
        if self.golden_kind not in ("own", "float64"):
            raise ValueError(f"TRAINREPRO_WATCH_GOLDEN: expected own or float64, found "
                             f"{self.golden_kind!r}")
        self.zero_stage = int(engine.zero_optimization_stage())
        self.named = [(n, p) for n, p in engine.module.named_parameters() if p.requires_grad]
        self._coordinates_on_device = {}
        self.coordinates = _coordinates_judged(
            [tuple(getattr(p, "ds_shape", None) or p.shape) for _, p in self.named],
            settings["coordinates"], torch)
        self.calls = []
        self.windows = []
        self.window = None
        self.micro = None
        self.inside = set()
        self.finished = False
        self._pending_judged = None
        self.golden_not_computed = ""
        self._patch(engine, "forward", self._forward)
        self._module_hooks = [
            engine.module.register_forward_pre_hook(self._module_forward_begins, with_kwargs=True),
            engine.module.register_forward_hook(self._module_forward_ends, with_kwargs=True,
                                                always_call=True)]
        self._patch(engine, "backward", self._backward)
        self._patch(engine, "step", self._engine_step)
        self._patch(engine, "zero_grad", self._called("engine.zero_grad()"))
        if hasattr(engine, "set_gradient_accumulation_boundary"):
            # The loop ending a window itself (accelerate's accumulate(), the Trainer): a
            # window closed before gradient_accumulation_steps micro-batches is judged by it.
            self._patch(engine, "set_gradient_accumulation_boundary", self._boundary_set)
        if hasattr(engine, "no_sync"):  # DeepSpeed 0.16.0+: the loop's own sync switch
            self._patch(engine, "no_sync", self._called("engine.no_sync()"))
        for seen in {id(o): o for o in (optimizer, engine.optimizer) if o is not None}.values():
            if isinstance(seen, torch.optim.Optimizer):
                # Hooks, not a replaced step: an LR scheduler marks the step it wraps and warns
                # when it is replaced.
                seen.register_step_pre_hook(lambda *_: self._before_optimizer_step())
                seen.register_step_post_hook(lambda *_: self._after_optimizer_step())
            else:
                self._patch(seen, "step", self._optimizer_step)
            self._patch(seen, "zero_grad", self._called("optimizer.zero_grad()"))
        for seen in {id(s): s for s in (scheduler, engine.lr_scheduler) if s is not None}.values():
            self._patch(seen, "step", self._called("lr_scheduler.step()"))
        self._tensor_backward = torch.Tensor.backward
        watcher = self

        def backward(tensor, *args, **kwargs):
            if not watcher.finished and "engine.backward" not in watcher.inside \
                    and "golden" not in watcher.inside:
                watcher.calls.append("loss.backward()")
                if watcher.micro is not None:
                    watcher.micro["loss"] = float(tensor.detach().float())
                    watcher._note_other_loss_terms(watcher.micro, tensor)
                    watcher.micro.pop("outputs", None)
            return watcher._tensor_backward(tensor, *args, **kwargs)

        torch.Tensor.backward = backward
        atexit.register(self._write, "the script exited")
        self.memory_steps = settings["memory_steps"]
        self.census = None
        if self.memory_steps > 0:
            import memory_census
            self.census = memory_census.MemoryCensus(self._own_tensors)
            atexit.register(self._write_memory)

    # --- the wrappers -----------------------------------------------------------------------

    def _patch(self, owner, name, wrapper):
        original = getattr(owner, name)
        setattr(owner, name, functools.partial(wrapper, original))

    def _called(self, call):
        def wrapper(original, *args, **kwargs):
            if not self.finished and not self.inside:
                self.calls.append(call)
            return original(*args, **kwargs)
        return wrapper

    def _boundary_set(self, original, is_boundary, *args, **kwargs):
        if is_boundary and not self.finished and not self.inside:
            self.calls.append("engine.set_gradient_accumulation_boundary(True)")
        return original(is_boundary, *args, **kwargs)

    def _forward(self, original, *args, **kwargs):
        recording = self._begin_micro_step(args, kwargs)
        self.inside.add("forward")
        try:
            outputs = original(*args, **kwargs)
        finally:
            self.inside.discard("forward")
        if recording:
            self._end_micro_step(outputs)
        return outputs

    # A loop that calls the engine's module itself (`engine.module(x)`: DeepSpeed's hooks are on
    # the module, so at every ZeRO stage this trains as engine(x) does) is seen by hooks on the
    # module; inside engine(x) they stand aside. Removed when the watched steps end, before the
    # golden's float64 copy and --save-scenario's trace call the module.
    def _module_forward_begins(self, module, args, kwargs):
        if "forward" not in self.inside and self._begin_micro_step(args, kwargs):
            self.inside.add("module forward")
        micro = self.micro
        if micro is not None and "rng" not in micro and "golden" not in self.inside and \
                not self.finished:
            # The generators as the module's forward found them: the golden's forward of this
            # micro-batch starts from the same state, so dropout draws the same masks.
            micro["rng"] = self._rng_state()

    def _rng_state(self):
        torch = self._torch
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        return torch.get_rng_state(), cuda

    def _set_rng_state(self, state):
        torch = self._torch
        cpu, cuda = state
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)

    def _module_forward_ends(self, module, args, kwargs, outputs):
        if "module forward" in self.inside:  # also called when the forward raised (no outputs)
            self.inside.discard("module forward")
            if outputs is not None:
                self._end_micro_step(outputs)

    def _begin_micro_step(self, args, kwargs):
        """Records a training forward's inputs as a new micro-step; False for an evaluation (under
        no_grad, in eval(), or, found later, a forward no backward followed) or a nested call."""
        recording = (not self.finished and self._torch.is_grad_enabled()
                     and self.engine.module.training and "forward" not in self.inside
                     and "module forward" not in self.inside and "golden" not in self.inside)
        if recording:
            with self._record():
                if self.window is None:
                    # The start weights are copied only for a golden that needs them apart from
                    # the module's own (float64) and for --save-scenario's model: the own-dtype
                    # golden runs at the boundary, before the update, on the module's weights,
                    # which are still the window's start weights then.
                    keep = self.golden_kind == "float64" or (self.save and not self.windows)
                    self.window = {"start": self._full_weights() if keep else None,
                                   "micro_steps": []}
                elif self.micro is not None and self.micro["loss"] is None:
                    self.window["micro_steps"].remove(self.micro)
                self.calls.append("forward")
                clone = lambda t: t.detach().clone()  # noqa: E731
                labels = kwargs.get("labels") if isinstance(kwargs, dict) else None
                self.micro = {"args": _map_tensors(args, clone),
                              "kwargs": _map_tensors(kwargs, clone),
                              "loss_function": None, "loss": None,
                              # Hugging Face's labels, as the Trainer counts them
                              # (num_items_in_batch)
                              "labels_counted": int((labels != -100).sum())
                              if isinstance(labels, self._torch.Tensor) else None}
                self.window["micro_steps"].append(self.micro)
        return recording

    def _end_micro_step(self, outputs):
        self.micro["outputs"] = outputs
        for name, arguments, result in self.micro.pop("calls_inside_forward", []):
            if self.micro["loss_function"] is None:
                self._match_loss_function(self.micro, name, arguments, result,
                                          inside_forward=True)

    def recording_micro_step(self):
        return not self.finished and self.micro is not None and "golden" not in self.inside

    def saw_loss_function(self, name, arguments, result):
        """A torch.nn.functional loss was called: the loop's loss when its input is (a view of)
        a tensor the current micro-step's forward returned, and the first such call. A call made
        inside the forward (a Hugging Face model computing its own loss from `labels`) is
        matched once the forward has returned its outputs."""
        micro = self.micro
        if self.finished or micro is None or micro["loss_function"] is not None:
            return
        if not isinstance(arguments.get("input"), self._torch.Tensor):
            return
        if "outputs" not in micro:
            # Its value and node as returned: the forward may add to that very tensor in place
            # afterwards (transformers' Mixtral: `loss += coef * aux_loss`).
            micro.setdefault("calls_inside_forward", []).append(
                (name, arguments, _as_returned(result)))
            return
        self._match_loss_function(micro, name, arguments, _as_returned(result),
                                  inside_forward=False)

    def _match_loss_function(self, micro, name, arguments, result, inside_forward):
        source = arguments["input"]
        pointer = source.untyped_storage().data_ptr()
        for path, tensor in _tensors_in(micro["outputs"]):
            if tensor.numel() == source.numel() and (
                    tensor.untyped_storage().data_ptr() == pointer or
                    _cast_of(source, tensor)):
                with self._record():
                    micro["loss_function"] = {
                        "name": name, "output": list(path), "input_shape": list(source.shape),
                        # The dtype the loss computed in: a bfloat16 model's logits cast up
                        # first (transformers' ForCausalLMLoss: logits.float()).
                        "input_dtype": str(source.dtype).replace("torch.", ""),
                        "target": arguments["target"].detach().clone(),
                        "reduction": arguments.get("reduction", "mean"),
                        "ignore_index": arguments.get("ignore_index", -100),
                        "label_smoothing": float(arguments.get("label_smoothing", 0.0) or 0.0),
                        "weighted": arguments.get("weight") is not None,
                        "inside_forward": inside_forward,
                        # What it returned, summed (reduction "none" too), in float64: the
                        # golden's self-check reproduces this number.
                        "value": result[0]}
                # Its autograd node, until the backward: the loss the loop passes there must be
                # this one times constants (_other_loss_terms).
                micro["loss_node"] = result[1]
                return

    def _backward(self, original, loss, *args, **kwargs):
        if not self.finished:
            self.calls.append("engine.backward()")
            if self.micro is not None:
                self.micro["loss"] = float(loss.detach().float())
                self._note_other_loss_terms(self.micro, loss)
                # The forward's outputs were kept to find the loss's input among them; held on
                # to the boundary they would be the watch's (a language model's logits are its
                # largest activation).
                self.micro.pop("outputs", None)
                # engine.backward(loss, retain_graph, scale_wrt_gas): False asks DeepSpeed not
                # to divide by gradient_accumulation_steps (transformers' Trainer passes it).
                scale = kwargs.get("scale_wrt_gas", args[1] if len(args) > 1 else True)
                self.micro["scale_wrt_gas"] = bool(scale)
        self.inside.add("engine.backward")
        try:
            return original(loss, *args, **kwargs)
        finally:
            self.inside.discard("engine.backward")

    def _note_other_loss_terms(self, micro, loss):
        """Before the backward: what the loss passed to it adds to the recognised loss
        function's value, if anything (the golden follows that function alone, so a loss made
        of several terms is not judged rather than judged wrong)."""
        node = micro.pop("loss_node", None)
        if micro["loss_function"] is not None and node is not None:
            micro["loss_function"]["other_terms"] = _other_loss_terms(
                getattr(loss, "grad_fn", None), node)

    def _engine_step(self, original, *args, **kwargs):
        if self.finished:
            boundary = self.census is not None and self.engine.is_gradient_accumulation_boundary()
            result = original(*args, **kwargs)
            if boundary:
                self._sample_memory()
            return result
        self.calls.append("engine.step()")
        boundary = self.engine.is_gradient_accumulation_boundary()
        judged = self._judge_boundary() if boundary and self.window is not None else None
        self.inside.add("engine.step")
        try:
            result = original(*args, **kwargs)
        finally:
            self.inside.discard("engine.step")
        if judged is not None:
            self._close_window(judged, "engine.step()")
        if boundary:
            self._sample_memory()
        return result

    def _optimizer_step(self, original, *args, **kwargs):
        self._before_optimizer_step()
        result = original(*args, **kwargs)
        self._after_optimizer_step()
        return result

    def _before_optimizer_step(self):
        """The loop steps the optimizer itself (not inside engine.step()): the window ends."""
        self._pending_judged = None
        if self.finished or self.inside:  # the engine's own step, or after the watched steps
            return
        self.calls.append("optimizer.step()")
        if self.window is not None:
            self._pending_judged = self._judge_boundary()

    def _after_optimizer_step(self):
        judged, self._pending_judged = self._pending_judged, None
        if judged is not None:
            self._close_window(judged, "optimizer.step()")

    def _judge_boundary(self):
        """At the boundary, before the optimizer updates the weights: the gradients the update
        will use and the golden's pieces (the weights are still the window's start weights
        here). What stays of the window is its judged coordinates, never its gradients whole:
        the watch holds at most one extra copy of the model's gradients, and only while one
        micro-step's golden is computed."""
        window = self.window
        window["micro_steps"] = [m for m in window["micro_steps"] if m["loss"] is not None]
        with self._record():
            gradients = self._full_gradients()
            pieces, golden = self._golden_at_boundary(window)
        return gradients, pieces, golden

    # --- what is recorded -------------------------------------------------------------------

    def _full_weights(self):
        from deepspeed.utils import safe_get_full_fp32_param
        with self._torch.no_grad():
            if self.zero_stage == 0:  # fp32 trains the module's own; bf16/fp16 a master copy
                masters = self._stage0_masters()
                return [(p if p.dtype == self._torch.float32 else
                         masters.get(id(p), safe_get_full_fp32_param(p)))
                        .detach().double().clone() for _, p in self.named]
            # ZeRO 1-3: the master's partitions gathered (a collective: every rank records its
            # window's start at the same forward).
            return [safe_get_full_fp32_param(p).double().clone() for _, p in self.named]

    def _stage0_masters(self):
        """At ZeRO stage 0 in bf16/fp16 DeepSpeed 0.19.8 wraps the optimizer in FP16_Optimizer
        (runtime/fp16/fused_optimizer.py), whose float32 masters are one flat tensor per group
        (fp32_groups_flat[g]) laid out as that group's parameters (fp16_groups[g]), in order;
        safe_get_full_fp32_param knows only BF16_Optimizer's and ZeRO's. {id(parameter): its
        master}; empty for another optimizer."""
        optimizer = self.engine.optimizer
        groups = getattr(optimizer, "fp16_groups", None)
        flats = getattr(optimizer, "fp32_groups_flat", None)
        masters = {}
        if not groups or not flats or len(groups) != len(flats):
            return masters
        for group, flat in zip(groups, flats):
            offset = 0
            for parameter in group:
                masters[id(parameter)] = flat[offset:offset + parameter.numel()].view_as(parameter)
                offset += parameter.numel()
        return masters

    def _full_gradients(self):
        """What the update will use, before clipping, on the judged coordinates: p.grad at stage
        0 (divided by a mixed precision wrapper's loss scale, as its step does), DeepSpeed's
        assembled gradient at ZeRO 1-3 (gathered one parameter at a time, a collective)."""
        from deepspeed.utils import safe_get_full_grad
        scale = float(getattr(self.engine.optimizer, "cur_scale", 1.0) or 1.0)
        gradients = []
        for j, (_, p) in enumerate(self.named):
            g = p.grad / scale if self.zero_stage == 0 and p.grad is not None else (
                None if self.zero_stage == 0 else safe_get_full_grad(p))
            gradients.append(self._judged_coordinates(j, g))
        return gradients

    def _judged_coordinates(self, j, gradient):
        """Parameter j's gradient on its judged coordinates, in float64 on the CPU (zeros for a
        parameter that received none)."""
        torch, chosen = self._torch, self.coordinates[j]
        if gradient is None:
            _, p = self.named[j]
            shape = (len(chosen),) if chosen is not None else \
                tuple(getattr(p, "ds_shape", None) or p.shape)
            return torch.zeros(shape, dtype=torch.float64)
        flat = gradient.detach().reshape(-1)
        if chosen is None:
            return flat.to("cpu", torch.float64, copy=True).reshape(gradient.shape)
        if flat.device.type != "cpu":  # the indices copied to the device once, not per call
            key = (j, str(flat.device))
            if key not in self._coordinates_on_device:
                self._coordinates_on_device[key] = chosen.to(flat.device)
            chosen = self._coordinates_on_device[key]
        return flat[chosen].to("cpu", torch.float64)

    def _close_window(self, judged, closed_by):
        window, self.window, self.micro = self.window, None, None
        window["run_gradients"], window["pieces"], window["golden"] = judged
        window["closed_by"] = closed_by
        window["calls_at_close"] = len(self.calls)
        window["start"] = window["start"] if self.save and not self.windows else None
        if not self.save:  # the inputs and targets served the golden; --save-scenario keeps them
            for micro in window["micro_steps"]:
                micro["args"] = micro["kwargs"] = None
                if micro["loss_function"] is not None:
                    micro["loss_function"]["target"] = None
        self.windows.append(window)
        if len(self.windows) >= self.steps_wanted:
            self._write("")
