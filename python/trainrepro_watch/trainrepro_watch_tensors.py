"""What the watch reads from the loop's values: the tensors inside nested arguments and outputs,
the gradient coordinates judged (the same on every rank), and the autograd graph of the loss the
loop passed to backward (the casts and views before it, the terms added to it)."""


# A tensor is never judged on fewer coordinates than this (or all of its own, when it has
# fewer): a fault confined to one tensor still shows, however small its share of the model.
_FEWEST_PER_TENSOR = 64
_SAMPLE_SEED = 0x7261696e  # the same coordinates on every rank and in every run


def _size(shape):
    count = 1
    for size in shape:
        count *= size
    return count


def _coordinates_judged(shapes, budget, torch):
    """For each trainable parameter, the flat indices of the gradient coordinates judged (None:
    all of them): every coordinate while the model has at most `budget` (0: no limit), else each
    tensor's share of the budget in proportion to its size, at least _FEWEST_PER_TENSOR, drawn
    at random from a fixed seed, so every rank judges the same coordinates (their sums over the
    ranks are the golden's) and every run the same."""
    sizes = [_size(shape) for shape in shapes]
    if budget <= 0 or sum(sizes) <= budget:
        return [None] * len(sizes)
    total, chosen = sum(sizes), []
    for j, size in enumerate(sizes):
        count = max(_FEWEST_PER_TENSOR, round(budget * size / total))
        if count >= size:
            chosen.append(None)
            continue
        generator = torch.Generator().manual_seed(_SAMPLE_SEED + j)
        chosen.append(torch.unique(torch.randint(size, (count,), generator=generator)))
    return chosen


def _map_tensors(value, function):
    import torch
    if isinstance(value, torch.Tensor):
        return function(value)
    if isinstance(value, dict):
        return type(value)((k, _map_tensors(v, function)) for k, v in value.items()) \
            if type(value) is dict else {k: _map_tensors(v, function) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        mapped = [_map_tensors(v, function) for v in value]
        return type(value)(mapped) if type(value) in (list, tuple) else mapped
    return value


def _tensors_in(value, path=()):
    """(path, tensor) for every tensor in an output: a tensor, a dict (Hugging Face's ModelOutput
    is one), a list or a tuple."""
    import torch
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _tensors_in(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _tensors_in(item, path + (index,))


def _select(value, path):
    for key in path:
        value = value[key]
    return value


def _as_returned(result):
    """A loss function's result as it returned it: its value summed in float64 (None for no
    tensor) and its autograd node."""
    if not hasattr(result, "detach"):
        return None, None
    return float(result.detach().double().sum()), getattr(result, "grad_fn", None)


_CAST_AND_VIEW_NODES = {"ToCopyBackward0", "ViewBackward0", "UnsafeViewBackward0",
                        "ReshapeAliasBackward0"}


def _cast_of(source, tensor):
    """Whether source is tensor cast to another dtype and maybe reshaped
    (`logits.float().view(-1, vocab)`, transformers' ForCausalLMLoss for a bfloat16 model):
    a chain of cast and view nodes from source's autograd node to tensor's."""
    target, node = tensor.grad_fn, source.grad_fn
    for _ in range(4):
        if target is None or node is None or \
                type(node).__name__ not in _CAST_AND_VIEW_NODES or not node.next_functions:
            return False
        node = node.next_functions[0][0]
        if node is target:
            return True
    return False


# Nodes through which a loss stays its input times a constant: scaled, negated, cast, viewed,
# summed or averaged (a reduction="none" loss reduced by the loop).
_SCALING_NODES = {"MulBackward0", "DivBackward0", "NegBackward0", "CloneBackward0",
                  "ToCopyBackward0", "ViewBackward0", "UnsafeViewBackward0",
                  "ReshapeAliasBackward0", "SqueezeBackward0", "SqueezeBackward1",
                  "SumBackward0", "SumBackward1", "MeanBackward0", "MeanBackward1"}


def _other_loss_terms(node, loss_node):
    """What lies between the loss given to backward (its autograd node) and the recognised loss
    function's result (loss_node), in words; "" when the path is a chain of scalings, each
    node with one input that has a gradient. A node with two (AddBackward0: a second loss
    added), a scaling by a tensor of several elements (per-element weights), a node that is no
    scaling, or no path at all is said."""
    for _ in range(64):
        if node is None:
            return "it does not depend on that value"
        if node is loss_node:
            return ""
        name = type(node).__name__
        inputs = [n for n, _ in node.next_functions if n is not None]
        if len(inputs) != 1:
            return f"it adds or combines other terms ({name})"
        # DeepSpeed's own autograd functions on a module's outputs (ZeRO 3's
        # PreBackwardFunctionForModuleBackward, which gathers parameters for the backward) pass
        # their input through unchanged.
        by_deepspeed = getattr(getattr(node, "_forward_cls", None), "__module__",
                               "").startswith("deepspeed.")
        if name not in _SCALING_NODES and not by_deepspeed:
            return f"it passes through {name}"
        for saved in ("_saved_other", "_saved_self") if name in ("MulBackward0",
                                                                 "DivBackward0") else ():
            try:
                factor = getattr(node, saved, None)
            except RuntimeError:  # not saved by this node
                factor = None
            if hasattr(factor, "numel") and factor.numel() > 1 and not factor.requires_grad:
                return f"it is weighted element by element ({name})"
        node = inputs[0]
    return "it is more than 64 operations away from it"
