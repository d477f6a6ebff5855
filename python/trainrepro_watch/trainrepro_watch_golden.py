"""The golden's pieces of a window, computed when it closes (before the optimizer updates the
weights): every micro-batch's gradient of its summed loss at the window's start weights, in the
run's own dtype (--golden own) or in float64 with a self-check against the loop's losses, kept
on the judged coordinates only. A mixin of Watcher (trainrepro_watch_watcher.py)."""
import contextlib
import functools
import math

from trainrepro_watch_settings import _loss_originals
from trainrepro_watch_tensors import _map_tensors, _select


def _calling(module, function):
    """A module holding MODULE whose forward calls FUNCTION: torch.func.functional_call over it
    swaps MODULE's parameters and buffers for the whole call, not only MODULE's forward. (Made
    here, not at import: this file is loaded before the script imports torch.)"""
    import torch

    class Calling(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self):
            return function()

    return Calling()


def _defined_by_deepspeed(hook):
    function = getattr(hook, "func", hook)  # functools.partial
    return getattr(function, "__module__", "").startswith("deepspeed.")


# The golden's self-check allows a correct run's rounding and no more. A sum of n terms computed
# in precision u errs by at most lambda sqrt(n) u times the sum of the terms' magnitudes, with
# probability at least 1 - 2 exp(-lambda^2 (1-u)^2 / 2) (Higham and Mary, "A new approach to
# probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019): the errors of the
# roundings are independent, so they add up as a random walk, not in a line. lambda is chosen
# for the chance that a correct micro-step fails, not tuned: 1e-6.
_SELF_CHECK_FAILURE_CHANCE = 1e-6
_LAMBDA = math.sqrt(2.0 * math.log(2.0 / _SELF_CHECK_FAILURE_CHANCE))  # 5.39


def _forward_reduction_length(module):
    """How many roundings in series a forward's output may carry: the sum of every weight's
    fan-in (a Linear's in_features, a convolution's in_channels x kernel, an embedding's width),
    each matrix product summing that many terms into each output along the way."""
    length = 0
    for p in module.parameters():
        shape = tuple(getattr(p, "ds_shape", None) or p.shape)  # ZeRO 3: the full shape
        if len(shape) >= 2 and shape[0] > 0:
            count = 1
            for size in shape:
                count *= size
            length += count // shape[0]
    return max(length, 1)


def _loss_allowance(loss, sensitivity, forward_length, loss_length, forward_dtype, loss_dtype):
    """How far a correct run's loss may be from the exact one: the forward's rounding (each of
    the loss's input elements off by lambda sqrt(forward_length) u rms(input), moving the loss by
    that times the loss's first-order sensitivity, sum |dL/dinput| x rms(input)) plus the loss's
    own (a log-sum-exp over the classes and a sum over the terms, lambda sqrt(loss_length) u
    |loss|). u is the unit roundoff of the dtype each part is computed in."""
    import torch
    forward_u = torch.finfo(forward_dtype).eps / 2
    loss_u = torch.finfo(loss_dtype).eps / 2
    return _LAMBDA * (forward_u * forward_length ** 0.5 * sensitivity +
                      loss_u * loss_length ** 0.5 * abs(loss))


class GoldenAtBoundary:
    """Watcher's methods that compute the golden's pieces (they read and set its state)."""

    def _golden_at_boundary(self, window):
        """The window's golden pieces (or none, the reason in golden_not_computed): computed
        here, at the boundary, so that no window's inputs or gradients outlive it. At ZeRO 3 the
        module's weights are gathered first, a collective every rank enters at every boundary
        whatever its own golden does next, so that no rank waits for another forever. The
        random number generators are put back afterwards: the golden's forwards draw from them
        (dropout), and the training must draw what it would have drawn unwatched."""
        torch = self._torch
        devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
        self.inside.add("golden")
        try:
            with torch.random.fork_rng(devices=devices), self._own_weights() as own:
                pieces, golden = [], None
                if not self.golden_not_computed:
                    try:
                        pieces, golden = self._golden_pieces(window, own)
                    except Exception as error:  # noqa: BLE001: the verdict says why
                        self.golden_not_computed = f"window {len(self.windows)}: {error}"
                if self.golden_kind == "float64":
                    pieces, golden = self._one_golden_on_every_rank(window, own, pieces, golden)
                return pieces, golden
        finally:
            self.inside.discard("golden")

    def _one_golden_on_every_rank(self, window, own, pieces, golden):
        """--golden float64 on several ranks: where one rank's float64 golden failed its
        self-check, every rank's float32 pieces become its own-dtype ones, so that the golden
        the judge sums over the ranks is of one dtype (a collective every rank enters at every
        boundary, whatever its golden did). A bfloat16 model's ranks all hold their twins
        already."""
        torch = self._torch
        dist = torch.distributed
        if self.world_size < 2 or not (dist.is_available() and dist.is_initialized()):
            return pieces, golden
        failed_here = golden is not None and golden["float64_failed"] is not None
        flag = torch.tensor([1.0 if failed_here else 0.0], device=self.engine.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() == 0.0 or failed_here or golden is None or \
                self._module_dtype() == torch.bfloat16:
            return pieces, golden
        try:
            pieces = self._own_pieces_instead(window, own, pieces)
        except Exception as error:  # noqa: BLE001: the verdict says why
            self.golden_not_computed = f"window {len(self.windows)}: {error}"
            return [], None
        return pieces, {"dtype": str(self._module_dtype()).replace("torch.", ""),
                        "float64_failed": None}

    @contextlib.contextmanager
    def _own_weights(self):
        """The module's weights as the run computes with them, for the own-dtype golden: the
        trainable ones as new leaves sharing the parameters' memory (their gradients go nowhere
        near DeepSpeed's), the frozen ones as they are, the buffers copied (a BatchNorm's
        forward in train mode updates its running statistics in place; the run's stay as the
        run left them). At ZeRO 3 None: the golden runs on the module itself, its partitions
        gathered layer by layer by DeepSpeed as for the run (gathering the whole model would
        need one more copy of every parameter on every rank), and its buffers are put back
        afterwards."""
        module = self.engine.module
        if self.zero_stage == 3:
            kept = [(b, b.detach().clone()) for b in module.buffers()]
            try:
                yield None
            finally:
                with self._torch.no_grad():
                    for buffer, value in kept:
                        buffer.copy_(value)
            return
        trainable = {n for n, _ in self.named}
        weights = {n: p.detach().requires_grad_(True) for n, p in self.named}
        values = {n: p.detach() for n, p in module.named_parameters() if n not in trainable}
        for name, b in module.named_buffers():
            values[name] = b.detach().clone()
        yield weights, values

    def _float64_weights(self, window):
        """The window's start weights in float64 (recorded at its first forward), the frozen
        parameters and buffers cast up: the float64 golden's."""
        torch, module = self._torch, self.engine.module
        names = [n for n, _ in self.named]
        weights = {n: w.to(torch.float64, copy=True).requires_grad_(True)
                   for n, w in zip(names, window["start"])}
        values = {}
        frozen = [(name, p) for name, p in module.named_parameters() if name not in weights]
        with self._gathered([p for _, p in frozen]):
            for name, p in frozen:
                values[name] = p.detach().double().clone()
        for name, b in module.named_buffers():
            values[name] = b.detach().double() if b.is_floating_point() else b.detach().clone()
        return weights, values

    def _golden_pieces(self, window, own):
        """Per micro-step: the gradient of its summed loss at the window's start weights (on the
        judged coordinates), its items and its summed loss. Raises ValueError saying why it
        cannot be computed. Returns (pieces, the window's golden record).

        --golden own (the default): each micro-step's forward and backward computed again in
        the run's own dtype and kernels, on the module's weights: the run's own function (a
        float32 mask built inside forward, a kernel that differs by dtype are the run's too),
        at the cost of one more forward and backward per micro-step and one copy of the
        gradients while it lasts. It checks itself: the loss it computes must be the loop's
        within twice the run's rounding (_loss_allowance), or the forward is not a function of
        the weights and inputs alone (dropout in train mode) and nothing is judged.

        --golden float64: the same in float64 at the recorded start weights (inputs cast up),
        which proves itself against the loop's loss within the run's rounding; when it is not
        the run's function, the own-dtype pieces judge instead. A bfloat16 model's float64
        pieces come with their own-dtype twins (the precision's own error)."""
        torch = self._torch
        module = self.engine.module
        losses = []
        for i, micro in enumerate(window["micro_steps"]):
            loss = micro["loss_function"]
            if loss is None:
                raise ValueError(
                    f"micro-step {i}'s loss was not computed by torch.nn.functional's "
                    "cross_entropy or mse_loss (or nn.CrossEntropyLoss / nn.MSELoss) on the "
                    "outputs of engine(...)")
            if loss["weighted"]:
                raise ValueError(f"micro-step {i}'s {loss['name']} has class weights, which the "
                                 "golden does not follow yet")
            if loss.get("other_terms"):
                raise ValueError(
                    f"micro-step {i}'s loss passed to backward is not {loss['name']}'s value "
                    f"times a constant: {loss['other_terms']}. The golden follows one loss "
                    "function; a loss of several terms (a second head's loss, a mixture of "
                    "experts' load-balancing loss) is not judged")
            losses.append(loss)
        own_dtype = self._module_dtype()
        own_name = str(own_dtype).replace("torch.", "")
        forward_length = _forward_reduction_length(module)
        if self.golden_kind == "own":
            return self._own_pieces(window, losses, own, forward_length, own_dtype, None), \
                {"dtype": own_name, "float64_failed": None}
        low_precision = own_dtype == torch.bfloat16
        golden = {"dtype": "float64", "float64_failed": None}
        weights64 = self._float64_weights(window)
        pieces = []
        for i, (micro, loss) in enumerate(zip(window["micro_steps"], losses)):
            summed, items, grads, check = self._piece(weights64, micro, loss, i, golden=True)
            check = self._self_check(loss, check, forward_length, own_dtype, copies=1)
            piece = {"items": items, "loss_sum": float(summed.detach()), "gradients": grads,
                     "self_check": check}
            if low_precision:
                piece["twin_gradients"] = self._piece(own, micro, loss, i, golden=False)[2]
            pieces.append(piece)
            if check is not None and not check["passed"] and golden["float64_failed"] is None:
                golden["float64_failed"] = dict(check, micro_step=i)
                golden["dtype"] = own_name
                if not low_precision:
                    break
        if golden["float64_failed"] is None or low_precision:
            return pieces, golden
        return self._own_pieces_instead(window, own, pieces), golden

    def _own_pieces_instead(self, window, own, float64_pieces):
        """The own-dtype pieces in place of float64 ones that are not the run's function, each
        keeping its float64 self-check."""
        checks = [p["self_check"] for p in float64_pieces]
        float64_pieces.clear()  # their gradients go before the own-dtype ones come
        return self._own_pieces(window, [m["loss_function"] for m in window["micro_steps"]],
                                own, _forward_reduction_length(self.engine.module),
                                self._module_dtype(), checks)

    def _own_pieces(self, window, losses, own, forward_length, own_dtype, float64_checks):
        pieces = []
        for i, (micro, loss) in enumerate(zip(window["micro_steps"], losses)):
            summed, items, grads, check = self._piece(own, micro, loss, i, golden=False)
            # Two computations in the run's dtype, each within the allowance of the true value.
            own_check = self._self_check(loss, check, forward_length, own_dtype, copies=2)
            if own_check is not None and not own_check["passed"]:
                raise ValueError(
                    f"the golden does not reproduce the loop's loss: micro-step {i}'s loss is "
                    f"{own_check['loop_loss']!r} in the loop, {own_check['golden_loss']!r} "
                    f"computed again in {str(own_dtype).replace('torch.', '')} at the window's "
                    f"start weights (allowance {own_check['allowance']:.3g}); the forward is "
                    "not a function of the weights and inputs alone (dropout in train mode, "
                    "other randomness, or weights changed inside the window)")
            pieces.append({"items": items, "loss_sum": float(summed.detach()),
                           "gradients": grads,
                           "self_check": own_check if float64_checks is None else
                           (float64_checks[i] if i < len(float64_checks) else None),
                           "own_check": own_check})
        return pieces

    def _self_check(self, loss, check, forward_length, dtype, copies):
        """The golden's loss for one micro-step against the loop's, with the allowance of
        _loss_allowance (times `copies`: how many of the two were computed in the run's
        dtype); None when the loop's loss function returned no tensor."""
        if loss.get("value") is None:
            return None
        torch = self._torch
        allowance = copies * _loss_allowance(
            check["value"], check["sensitivity"], forward_length, check["loss_length"],
            dtype, getattr(torch, loss.get("input_dtype", "float32")))
        difference = abs(check["value"] - loss["value"])
        return {"loop_loss": loss["value"], "golden_loss": check["value"],
                "allowance": allowance, "ratio": difference / allowance if allowance > 0
                else float("inf") if difference > 0 else 0.0,
                "passed": difference <= allowance}

    def _grad_accum_dtype(self):
        """The dtype DeepSpeed sums a window's gradients in (engine.get_data_types(): the
        config's data_types.grad_accum_dtype, else the model's); None where it cannot say."""
        try:
            return str(self.engine.get_data_types()[1]).replace("torch.", "")
        except Exception:  # noqa: BLE001: an engine without it; the judge then assumes nothing
            return None

    def _shapes(self):
        return [tuple(getattr(p, "ds_shape", None) or p.shape) for _, p in self.named]

    def _module_dtype(self):
        return next(self.engine.module.parameters()).dtype

    def _piece(self, weights_and_values, micro, loss, i, golden):
        """One micro-step's summed loss, its items, the gradient of that sum on the judged
        coordinates (float64) and what the self-check needs: at the given weights (the float64
        golden's, inputs cast up, golden True; or the run's own as new leaves, inputs as the
        loop passed them), or, weights_and_values None (ZeRO 3), on the module as it trains,
        DeepSpeed's hooks gathering each layer's partitions for its forward and backward as
        they do for the run. No weight's whole gradient outlives its own completion."""
        torch = self._torch
        from torch.func import functional_call
        module = self.engine.module
        to64 = lambda t: t.double() if t.is_floating_point() else t  # noqa: E731
        inputs = to64 if golden else (lambda t: t)  # noqa: E731

        def forward_and_loss(args=micro["args"], kwargs=micro["kwargs"]):
            if micro.get("rng") is not None:
                self._set_rng_state(micro["rng"])
            outputs = module(*_map_tensors(args, inputs), **_map_tensors(kwargs, inputs))
            source = _select(outputs, loss["output"]).reshape(loss["input_shape"])
            if not golden:  # computed in the dtype the loop's loss was (logits.float())
                source = source.to(getattr(torch, loss.get("input_dtype", "float32")))
            if golden and source.dtype != torch.float64:
                raise ValueError(f"the model's output {loss['output']} is "
                                 f"{source.dtype}, not float64, with float64 weights and "
                                 "inputs: the model casts inside its forward")
            rows = _select(outputs, loss["output"]).shape[0]
            check = self._loop_loss_again(loss, source)
            summed, items = self._summed_loss(loss, source, rows, i)
            return summed, items, check

        judged = {}

        def judged_gradients():
            return [judged[j] if j in judged else self._judged_coordinates(j, None)
                    for j in range(len(self.named))]

        if weights_and_values is None:
            # A tensor hook on each parameter keeps its gradient's judged coordinates and hands
            # autograd a zero of no memory in its place; autograd.grad never runs the
            # accumulation nodes DeepSpeed's reduction hooks hang on.
            def keep_and_drop(j, gradient):
                judged[j] = self._judged_coordinates(j, gradient)
                return gradient.new_zeros(()).expand(gradient.shape)

            parameters = [p for _, p in self.named]
            hooks = [p.register_hook(functools.partial(keep_and_drop, j))
                     for j, p in enumerate(parameters)]
            try:
                with torch.enable_grad():
                    summed, items, check = forward_and_loss()
                    torch.autograd.grad(summed, parameters, allow_unused=True)
            finally:
                for hook in hooks:
                    hook.remove()
            return summed.detach(), items, judged_gradients(), check

        weights, frozen_values = weights_and_values
        names = [n for n, _ in self.named]
        values = dict(weights)
        values.update(frozen_values)

        def forward_and_backward():
            summed, items, check = forward_and_loss()
            # Each weight's gradient is cut down to its judged coordinates as soon as it is
            # complete, and dropped: the whole model's gradients never exist at once.
            def keep_judged(j, leaf):
                judged[j] = self._judged_coordinates(j, leaf.grad)
                leaf.grad = None

            hooks = [weights[n].register_post_accumulate_grad_hook(
                functools.partial(keep_judged, j)) for j, n in enumerate(names)]
            try:
                torch.autograd.backward(summed, inputs=[weights[n] for n in names])
            finally:
                for hook in hooks:
                    hook.remove()
            return summed.detach(), items, judged_gradients(), check

        # The backward runs while the weights are still swapped in: a checkpointed block
        # (gradient checkpointing) runs its forward again inside the backward.
        with torch.enable_grad(), self._without_deepspeed_module_hooks():
            return functional_call(_calling(module, forward_and_backward),
                                   {f"module.{name}": value for name, value in values.items()},
                                   ())

    def _loop_loss_again(self, loss, source):
        """The loop's own loss call (its reduction, ignore_index, label smoothing) on this
        golden's forward, summed as the loop's value was; and what the self-check's allowance
        needs: the loss's sensitivity to rounding in its input, rms(input) x sum |dL/dinput|
        (first order: an error of e x rms(input) in each input element moves the loss by at
        most that times e), and the loss's own reduction length (classes + terms)."""
        torch = self._torch
        target = loss["target"]
        original = _loss_originals[loss["name"]]
        if loss["name"] == "mse_loss":
            value = original(source, target.to(source.dtype), reduction=loss["reduction"])
            classes, terms = 1, source.numel()
        else:
            if target.is_floating_point():
                target = target.to(source.dtype)
            value = original(source, target, reduction=loss["reduction"],
                             ignore_index=loss["ignore_index"],
                             label_smoothing=loss["label_smoothing"])
            classes = source.shape[1] if source.dim() > 1 else source.shape[0]
            terms = target.shape[0] if target.is_floating_point() else target.numel()
        value = value.sum()
        slope, = torch.autograd.grad(value, source, retain_graph=True)
        rms = float(source.detach().double().pow(2).mean().sqrt())
        return {"value": float(value.detach().double()),
                "sensitivity": rms * float(slope.detach().double().abs().sum()),
                "loss_length": int(classes) + int(terms)}

    def _gathered(self, parameters):
        """The parameters whole while inside: at ZeRO 3 DeepSpeed's GatheredParameters (a
        collective: every rank computes its golden at the same point), else as they are."""
        if self.zero_stage != 3 or not parameters:
            return contextlib.nullcontext()
        return self._deepspeed.zero.GatheredParameters(parameters)

    @contextlib.contextmanager
    def _without_deepspeed_module_hooks(self):
        """At ZeRO 3 DeepSpeed hooks every submodule to gather its partitioned parameters before
        the forward and release them after; the golden's float64 copy brings its own whole
        weights, so those hooks (and only those: the model's own stay) are set aside while it
        runs, and put back."""
        if self.zero_stage != 3:
            yield
            return
        kept = []
        for submodule in self.engine.module.modules():
            for attribute in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                              "_backward_pre_hooks"):
                hooks = getattr(submodule, attribute, None)
                if not hooks or not any(map(_defined_by_deepspeed, hooks.values())):
                    continue
                kept.append((hooks, list(hooks.items())))  # put back in their order
                for key in [k for k, hook in hooks.items() if _defined_by_deepspeed(hook)]:
                    del hooks[key]
        try:
            yield
        finally:
            for hooks, items in kept:
                hooks.clear()
                hooks.update(items)

    def _summed_loss(self, loss, source, rows, i):
        """The micro-batch's loss summed over its items, and its items, as --loss defines the
        golden's: "auto" and "tokens" (cross entropy over every counted target; MSE over every
        element), "samples" (each of the output's `rows` samples averaged over its own counted
        targets or elements, then summed), "mse" (the loop's loss must be MSE), "model" (the
        loss the model computes inside its own forward, as Hugging Face models do from
        `labels`: a mean over its counted targets, so the whole batch's is these sums over
        their items)."""
        torch, kind, target = self._torch, self.loss_kind, loss["target"]
        if kind == "mse" and loss["name"] != "mse_loss" or \
                kind == "tokens" and loss["name"] != "cross_entropy":
            raise ValueError(f"--loss {kind}, but micro-step {i}'s loss is {loss['name']}")
        if kind == "model" and not loss["inside_forward"]:
            raise ValueError(f"--loss model, but micro-step {i}'s loss was computed by the loop "
                             "on the outputs, not by the model's own forward")
        if loss["name"] == "mse_loss":
            error = (source - target.to(source.dtype)) ** 2
            if kind != "samples":
                return error.sum(), error.numel()
            return error.reshape(rows, -1).mean(dim=1).sum(), rows
        original = _loss_originals["cross_entropy"]
        # Label smoothing changes each target's loss, never which targets count: torch's mean
        # still divides by the targets not ignored.
        smoothing = loss["label_smoothing"]
        if target.is_floating_point():  # class probabilities: one item per row
            return original(source, target.to(source.dtype), reduction="sum",
                            label_smoothing=smoothing), target.shape[0]
        ignore = loss["ignore_index"]
        per_target = original(source, target, reduction="none", ignore_index=ignore,
                              label_smoothing=smoothing)
        counted = target != ignore
        if kind != "samples":
            return per_target.sum(), int(counted.sum())
        counts = counted.reshape(rows, -1).sum(dim=1)
        sums = per_target.reshape(rows, -1).sum(dim=1)
        present = counts > 0
        return (sums[present] / counts[present]).sum(), int(present.sum())
