#!/usr/bin/env python3
"""Recomputes golden files independently with Python PyTorch and checks they agree to 1e-10.

The goldens are written by trainrepro's own C++ engine; checking them only against that engine
would prove nothing. This script reads each golden's key (model, data, optimizer, batch, steps),
its initial weights and its samples, re-implements the models functionally, and trains with
torch.optim (SGD, Adam, AdamW), torch.nn.utils.clip_grad_norm_ and DeepSpeed's LR schedules
(written again below) in float64 on the CPU. Every
step's loss, gradients and parameters must agree with the file to 1e-10.

A golden of a user's TorchScript model (model "torchscript") names its file and the file's
sha256: the file is found under --user-files (default: the repository's scenarios/) by that
digest, loaded with Python's torch.jit.load, cast to float64 and given the golden's initial
weights; the loss is the same per-item loss, written again below.

Usage: cross_check_goldens.py GOLDEN_DIR [--min-files N] [--user-files DIR]
"""
import argparse
import hashlib
import json
import math
import pathlib
import sys

import torch
import torch.nn.functional as F
try:
    from safetensors import safe_open
    from safetensors.torch import load_file
except ImportError:
    # A GPU machine's own Python (TRAINREPRO_TORCH_PYTHON) may lack safetensors: CTest shows a skip.
    print("skipped: this Python has no safetensors")
    sys.exit(77)

TOLERANCE = 1e-10


def mlp_loss_sum(params, options, inputs, targets):
    layers = len(options["dims"]) - 1
    activation = {"relu": F.relu, "tanh": torch.tanh,
                  "gelu": lambda x: F.gelu(x, approximate="none")}[options["activation"]]
    x = inputs
    for i in range(layers):
        x = F.linear(x, params[f"layers.{i}.weight"], params[f"layers.{i}.bias"])
        if i < layers - 1:
            x = activation(x)
    if targets.dtype == torch.int64:  # classification: cross entropy per sample
        return F.cross_entropy(x, targets, reduction="sum"), targets.shape[0]
    # regression: mean over outputs of the squared error, summed over samples
    return ((x - targets) ** 2).mean(dim=1).sum(), targets.shape[0]


def gpt_loss_sum(params, options, inputs, targets, mask):
    n, s = inputs.shape
    d, h = options["d_model"], options["heads"]
    x = params["token_embedding.weight"][inputs] + params["position_embedding.weight"][:s]
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    allowed = causal[None, None, :, :] & (inputs != 0)[:, None, None, :]
    for i in range(options["layers"]):
        p = lambda name: params[f"blocks.{i}.{name}"]
        y = F.layer_norm(x, (d,), p("ln1.weight"), p("ln1.bias"), eps=1e-5)
        q, k, v = F.linear(y, p("attn_qkv.weight"), p("attn_qkv.bias")).split(d, dim=-1)
        heads = lambda t: t.reshape(n, s, h, d // h).transpose(1, 2)
        scores = heads(q) @ heads(k).transpose(-2, -1) / math.sqrt(d // h)
        probs = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        attended = (probs @ heads(v)).transpose(1, 2).reshape(n, s, d)
        x = x + F.linear(attended, p("attn_out.weight"), p("attn_out.bias"))
        y = F.layer_norm(x, (d,), p("ln2.weight"), p("ln2.bias"), eps=1e-5)
        y = F.gelu(F.linear(y, p("mlp_in.weight"), p("mlp_in.bias")), approximate="none")
        x = x + F.linear(y, p("mlp_out.weight"), p("mlp_out.bias"))
    x = F.layer_norm(x, (d,), params["ln_f.weight"], params["ln_f.bias"], eps=1e-5)
    logits = F.linear(x, params["head.weight"], params["head.bias"])
    return F.cross_entropy(logits[mask], targets[mask], reduction="sum"), int(mask.sum())


def item_loss_sum(outputs, targets, mask):
    if mask is not None:  # tokens: cross entropy per counted target token
        return F.cross_entropy(outputs[mask], targets[mask], reduction="sum"), int(mask.sum())
    if targets.dtype == torch.int64:  # classification: cross entropy per sample
        return F.cross_entropy(outputs, targets, reduction="sum"), targets.shape[0]
    return ((outputs - targets) ** 2).mean(dim=1).sum(), targets.shape[0]


def find_user_file(options, root):
    """The file a golden was made from: its name as the scenario wrote it, found by digest."""
    wanted = options["sha256"]
    for path in sorted(root.rglob(pathlib.PurePath(options["file"]).name)):
        if hashlib.sha256(path.read_bytes()).hexdigest() == wanted:
            return path
    raise FileNotFoundError(f"no file named {options['file']} with sha256 {wanted} under {root}")


def torchscript_parameters(options, root, init):
    """The user's module in float64 with the golden's initial weights as its own parameters."""
    module = torch.jit.load(str(find_user_file(options, root)), map_location="cpu").double()
    module.train()
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, value in init.items():
            params[name].copy_(value)
    return module, params


class FusedLambAsWritten(torch.optim.Optimizer):
    """DeepSpeed's FusedLamb as its CUDA kernel computes it (csrc/lamb/fused_lamb_cuda_kernel.cu),
    per tensor, in plain torch: moments, update = m / denom + decay * p, the tensor's trust ratio
    clamped to [min_coeff, max_coeff] (1 when a norm is 0), the bias-corrected step size."""

    def __init__(self, params, config):
        super().__init__(params, dict(lr=config["lr"], betas=tuple(config["betas"])))
        self.config = config
        self.t = 0

    @torch.no_grad()
    def step(self):
        c = self.config
        self.t += 1
        for group in self.param_groups:
            b1, b2 = group["betas"]
            size = group["lr"]
            if c["bias_correction"]:
                size *= math.sqrt(1 - b2 ** self.t) / (1 - b1 ** self.t)
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["m"], state["v"] = torch.zeros_like(p), torch.zeros_like(p)
                m, v, g = state["m"], state["v"], p.grad
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (v + c["eps"]).sqrt() if c["eps_inside_sqrt"] else v.sqrt() + c["eps"]
                update = m / denom + group.get("weight_decay", c["weight_decay"]) * p
                w, u = float(p.norm()), float(update.norm())
                ratio = min(max(w / u, c["min_coeff"]), c["max_coeff"]) if w != 0 and u != 0 else 1.0
                p.add_(update, alpha=-size * ratio)


def without_decay(name):
    """The Trainer's rule (transformers' get_decay_parameter_names) on the zoo's names: biases,
    and the parameters of LayerNorm modules (the GPT's ln1, ln2, ln_f)."""
    return name.endswith("bias") or name.split(".")[-2] in ("ln1", "ln2", "ln_f")


def make_optimizer(config, params, names):
    lr, decay = config["lr"], config["weight_decay"]
    if config.get("parameter_groups"):
        # The script's own groups, by name, each with its weight decay and lr ("own_lr" is
        # what a scheduler that scales each group's lr starts from).
        by_name = dict(zip(names, params))
        params = [{"params": [by_name[n] for n in group["names"]],
                   "weight_decay": group["weight_decay"], "lr": group.get("lr", lr),
                   "own_lr": group.get("lr", lr)} for group in config["parameter_groups"]]
    elif config.get("decay_skips_bias_and_norm"):
        # The Hugging Face Trainer's two groups: decayed weights first, the rest at 0.
        params = [{"params": [p for p, n in zip(params, names) if not without_decay(n)]},
                  {"params": [p for p, n in zip(params, names) if without_decay(n)],
                   "weight_decay": 0.0}]
    if config["type"] == "Lamb":
        return FusedLambAsWritten(params, config)
    if config["type"] == "SGD":
        return torch.optim.SGD(params, lr=lr, momentum=config["momentum"],
                               dampening=config["dampening"], nesterov=config["nesterov"],
                               weight_decay=decay, foreach=False)
    betas, eps = tuple(config["betas"]), config["eps"]
    if config["betas"][1] > 1.0:
        return None  # sqrt(1 - beta2^t) has no real value: the golden must diverge (below)
    if config["decoupled_weight_decay"]:
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=decay,
                                 foreach=False)
    return torch.optim.Adam(params, lr=lr, betas=betas, eps=eps, weight_decay=decay,
                            foreach=False)


def one_cycle_scale(c, iteration):
    """OneCycle's place in the cycle (0 bottom, 1 peak) one batch ahead of `iteration`."""
    batch = iteration + 1
    first, second = c["cycle_first_step_size"], c["cycle_second_step_size"]
    total = first + second
    x = 1 + batch / total - math.floor(1 + batch / total)
    rising = x <= first / total
    scale = x / (first / total) if rising else (x - 1) / (first / total - 1)
    stairs = c["cycle_first_stair_count"] if rising else c["cycle_second_stair_count"]
    if c["stair_counts_applied"] and stairs > 0:
        offset = batch % total
        position = offset * stairs / first if offset <= first else (total - offset) * stairs / second
        scale = math.floor(position) / stairs
    return scale


def one_cycle(c, iteration):
    """OneCycle's (lr, beta1 or None) at `iteration`, from DeepSpeed's documented policy."""
    total = c["cycle_first_step_size"] + c["cycle_second_step_size"]
    momentum = c["cycle_momentum"]
    if iteration < 0:
        return c["cycle_min_lr"], (c["cycle_min_mom"] if momentum else None)
    if iteration < total:
        scale = one_cycle_scale(c, iteration)
        return (c["cycle_min_lr"] + (c["cycle_max_lr"] - c["cycle_min_lr"]) * scale,
                c["cycle_max_mom"] - (c["cycle_max_mom"] - c["cycle_min_mom"]) * scale if momentum else None)
    intervals = (iteration - total + 1) / c["decay_step_size"] if c["decay_step_size"] else 0.0
    lr = c["cycle_min_lr"]
    if c["decay_step_size"] and c["decay_lr_rate"]:
        lr = lr / (1 + c["decay_lr_rate"] * intervals)
    mom = c["cycle_max_mom"]
    if c["decay_step_size"] and c["decay_mom_rate"]:
        mom = mom * (1 + c["decay_mom_rate"] * intervals)
    return lr, (mom if momentum else None)


def scheduled_lr(schedule, iteration, base_lr):
    """DeepSpeed's WarmupLR / WarmupDecayLR / WarmupCosineLR rate at `iteration` (-1 before the
    first step), written again here from DeepSpeed's documented formulas, as the key records them."""
    if schedule["type"] == "OneCycle":
        return one_cycle(schedule, iteration)[0]
    warmup = max(2, schedule["warmup_num_steps"])
    log = schedule["warmup_type"] == "log"

    def fraction(i):
        return math.log(i + 1) / math.log(warmup) if log else i / warmup

    if schedule["type"] == "WarmupCosineLR":
        if iteration < 0:
            return 0.0
        if iteration < warmup:
            low = schedule["warmup_min_ratio"]
            return base_lr * (low + fraction(iteration) * (1 - low))
        span = schedule["total_num_steps"] - warmup
        progress = (iteration - warmup + 1) / (max(1, span) if schedule["cosine_progress_clamped"] else span)
        if schedule["cosine_progress_clamped"]:
            progress = min(1.0, progress)
        floor = schedule["cos_min_ratio"]
        return base_lr * max(0.0, floor + (1 - floor) * (1 + math.cos(math.pi * progress)) / 2)
    low = schedule["warmup_min_lr"]
    high = base_lr if schedule["warmup_max_lr"] == "optimizer lr" else schedule["warmup_max_lr"]
    if iteration < 0:
        return low
    if iteration < warmup:
        gamma = fraction(iteration)
    elif schedule["type"] == "WarmupDecayLR":
        total = schedule["total_num_steps"]
        gamma = max(0.0, (total - iteration) / max(1.0, total - warmup))
    else:
        gamma = 1.0
    return low + (high - low) * gamma


def largest_difference(actual, expected):
    return float((actual - expected).abs().max()) if actual.numel() else 0.0


def check_file(path, user_files):
    tensors = load_file(str(path))
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    key = json.loads(metadata["key"])
    names = json.loads(metadata["parameters"])
    model, data = key["model"], key["data"]
    batch, steps = key["train_batch_size"], key["steps"]

    module = None
    if model["name"] == "torchscript":
        init = {name: tensors[f"init/{name}"] for name in names}
        init.update({name[len("frozen/"):]: t for name, t in tensors.items()
                     if name.startswith("frozen/")})
        module, params = torchscript_parameters(model["options"], user_files, init)
        for name, param in params.items():
            param.requires_grad_(name in names)
    else:
        params = {name: tensors[f"init/{name}"].clone().requires_grad_(True) for name in names}
    ordered = [params[name] for name in names]
    # Parameters the scenario froze (key model.frozen) take part in the forward, unchanged.
    frozen = {name[len("frozen/"):]: t for name, t in tensors.items() if name.startswith("frozen/")}
    if bool(frozen) != bool(model.get("frozen")):
        return False, 0.0, [f"frozen tensors {sorted(frozen)} do not match the key's "
                            f"model.frozen {model.get('frozen')}"]
    params.update(frozen)
    optimizer = make_optimizer(key["optimizer"], ordered, names)
    inputs, targets = tensors["data/inputs"], tensors["data/targets"]
    mask = tensors.get("data/mask")

    worst = 0.0
    for step in range(steps):
        rows = slice(step * batch, (step + 1) * batch)
        for param in ordered:
            param.grad = None
        if module is not None:
            outputs = module(inputs[rows])
            outputs = outputs[0] if isinstance(outputs, tuple) else outputs
            loss_sum, items = item_loss_sum(outputs, targets[rows],
                                            None if mask is None else mask[rows])
        elif model["name"] == "mlp":
            loss_sum, items = mlp_loss_sum(params, model["options"], inputs[rows], targets[rows])
        else:
            loss_sum, items = gpt_loss_sum(params, model["options"], inputs[rows],
                                           targets[rows], mask[rows])
        loss = loss_sum / items
        loss.backward()
        problems = []
        differences = {"loss": abs(float(loss.detach()) - float(tensors[f"step{step}/loss"]))}
        for name in names:
            differences[f"grad/{name}"] = largest_difference(
                params[name].grad, tensors[f"step{step}/grad/{name}"])
        if optimizer is None:
            # A golden that reproduces a divergence: its first step's loss and gradients are
            # ordinary, and Adam's bias correction then makes every parameter NaN.
            for name in names:
                if not bool(tensors[f"step{step}/param/{name}"].isnan().all()):
                    problems.append(f"step {step} param/{name}: expected NaN (beta2 > 1)")
            return not problems and max(differences.values()) <= TOLERANCE, worst, problems
        if key["gradient_clipping"] > 0:
            torch.nn.utils.clip_grad_norm_(ordered, key["gradient_clipping"])
        if "lr_schedule" in key:  # the engine steps the scheduler after each optimizer step
            for group in optimizer.param_groups:
                group["lr"] = scheduled_lr(key["lr_schedule"], step - 1,
                                           group.get("own_lr", key["optimizer"]["lr"]))
                # OneCycle writes (momentum, 0.99) into the betas of optimizers that have them.
                if key["lr_schedule"]["type"] == "OneCycle" and "betas" in group:
                    beta1 = one_cycle(key["lr_schedule"], step - 1)[1]
                    if beta1 is not None:
                        group["betas"] = (beta1, 0.99)
        optimizer.step()
        for name in names:
            differences[f"param/{name}"] = largest_difference(
                params[name].detach(), tensors[f"step{step}/param/{name}"])
        for what, difference in differences.items():
            worst = max(worst, difference)
            if not difference <= TOLERANCE:
                problems.append(f"step {step} {what}: differs by {difference:.3e}")
        if problems:
            return False, worst, problems
    return True, worst, []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("golden_dir")
    parser.add_argument("--min-files", type=int, default=2)
    parser.add_argument("--user-files", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[2] / "scenarios",
                        help="where the TorchScript files of user-model goldens are found")
    args = parser.parse_args()
    torch.set_default_dtype(torch.float64)
    files = sorted(pathlib.Path(args.golden_dir).glob("*.safetensors"))
    if len(files) < args.min_files:
        print(f"{args.golden_dir}: expected at least {args.min_files} golden files, "
              f"found {len(files)}")
        return 1
    failed = 0
    for path in files:
        ok, worst, problems = check_file(path, args.user_files)
        print(f"{'AGREES' if ok else 'DIFFERS'} {path.name}: largest difference {worst:.2e}")
        for problem in problems[:10]:
            print("    " + problem)
        failed += not ok
    print(f"{len(files) - failed} of {len(files)} goldens agree with an independent PyTorch "
          f"recomputation to {TOLERANCE:g}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
