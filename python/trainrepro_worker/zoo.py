"""trainrepro's model zoo and data generators as PyTorch nn.Modules, for the DeepSpeed oracle.

Written from models/README.md and the C++ sources (models/*.cpp), and checked at run time against
the goldens: every scenario first verifies that these generators reproduce the golden's stored
samples exactly and that these models reproduce the golden's first loss and gradients in float64
(`self_check`). Parameter names and their order are the C++ ones (they key the golden files).
"""
import contextlib
import math

import torch
import torch.utils.checkpoint
import torch.nn as nn
import torch.nn.functional as F

# --- data (models/sample_source.cpp) --------------------------------------------------------
CHUNK_SAMPLES = 64
SEED_STRIDE = 1000003  # offset 0 is the teacher, offset c + 1 is chunk c


def _generator(seed):
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


class Batch:
    def __init__(self, inputs, targets, mask=None):
        self.inputs, self.targets, self.mask = inputs, targets, mask
        self.samples = inputs.shape[0]
        self.items = int(mask.sum()) if mask is not None else self.samples


class SampleSource:
    """Sample i depends only on i and the data seed: samples are drawn in chunks of 64."""

    def __init__(self, data):
        self.name, self.options, self.seed = data["name"], data["options"], data["seed"]
        if self.name not in ("classification", "regression", "token_sequences"):
            raise ValueError(f"the oracle does not know the data generator {self.name!r}")
        self._cache = {}
        # Entered around making a chunk: the engine worker's memory probe leaves the cache (the
        # harness's data, not the training's) out of the host heap it judges.
        self.chunk_context = contextlib.nullcontext

    def cached_tensors(self):
        """The chunks made so far: the data source's own memory."""
        for part in self._cache.values():
            yield from (t for t in part if t is not None)

    def _chunk(self, chunk):
        if chunk in self._cache:
            return self._cache[chunk]
        with self.chunk_context():
            return self._make_chunk(chunk)

    def _make_chunk(self, chunk):
        o, seed = self.options, self.seed
        g = _generator(seed * SEED_STRIDE + chunk + 1)
        f64 = torch.float64
        if self.name == "classification":
            teacher = torch.randn(o["classes"], o["features"], generator=_generator(seed * SEED_STRIDE),
                                  dtype=f64)
            inputs = torch.randn(CHUNK_SAMPLES, o["features"], generator=g, dtype=f64)
            part = (inputs, (inputs @ teacher.t()).argmax(dim=1), None)
        elif self.name == "regression":
            teacher = torch.randn(o["outputs"], o["features"], generator=_generator(seed * SEED_STRIDE),
                                  dtype=f64)
            inputs = torch.randn(CHUNK_SAMPLES, o["features"], generator=g, dtype=f64)
            noise = torch.randn(CHUNK_SAMPLES, o["outputs"], generator=g, dtype=f64)
            targets = inputs @ teacher.t() / math.sqrt(o["features"]) + o["noise"] * noise
            part = (inputs, targets, None)
        else:
            width = o["max_length"]
            lengths = torch.randint(o["min_length"], o["max_length"] + 1, (CHUNK_SAMPLES,), generator=g,
                                    dtype=torch.int64)
            tokens = torch.randint(1, o["vocab_size"], (CHUNK_SAMPLES, width), generator=g,
                                   dtype=torch.int64)
            positions = torch.arange(width, dtype=torch.int64)
            next_tokens = torch.cat([tokens[:, 1:], torch.zeros(CHUNK_SAMPLES, 1, dtype=torch.int64)], 1)
            inputs = tokens.masked_fill(positions >= lengths[:, None], 0)
            mask = positions < (lengths[:, None] - 1)
            part = (inputs, next_tokens.masked_fill(~mask, 0), mask)
        self._cache[chunk] = part
        return part

    def samples(self, begin, end, dtype=torch.float32):
        first, last = begin // CHUNK_SAMPLES, max(begin // CHUNK_SAMPLES, (end - 1) // CHUNK_SAMPLES)
        parts = [self._chunk(c) for c in range(first, last + 1)]
        offset, count = begin - first * CHUNK_SAMPLES, end - begin

        def cut(tensors):
            return torch.cat(tensors)[offset:offset + count]

        inputs, targets = cut([p[0] for p in parts]), cut([p[1] for p in parts])
        if inputs.is_floating_point():
            inputs = inputs.to(dtype)
        if targets.is_floating_point():
            targets = targets.to(dtype)
        mask = cut([p[2] for p in parts]) if parts[0][2] is not None else None
        return Batch(inputs, targets, mask)


# --- models (models/mlp_model.cpp, models/gpt_model.cpp) --------------------------------------
def run_block(module, block, *args):
    """A block as the loop's "activation_checkpointing" habit runs it: through DeepSpeed's own
    checkpoint functions (reentrant or not), or torch's (module.checkpoint_library "torch": the
    FSDP2 worker, no DeepSpeed), or plainly."""
    mode = getattr(module, "checkpointing", "none")
    if mode == "none" or not torch.is_grad_enabled():
        return block(*args)
    if getattr(module, "checkpoint_library", "deepspeed") == "torch":
        if mode not in ("reentrant", "non_reentrant"):
            raise ValueError(f"unknown activation_checkpointing {mode!r}")
        return torch.utils.checkpoint.checkpoint(block, *args, use_reentrant=mode == "reentrant")
    import deepspeed  # deepspeed.checkpointing is runtime.activation_checkpointing.checkpointing
    if mode == "reentrant":
        return deepspeed.checkpointing.checkpoint(block, *args)
    if mode == "non_reentrant":
        return deepspeed.checkpointing.non_reentrant_checkpoint(block, *args)
    raise ValueError(f"unknown activation_checkpointing {mode!r}")


class Mlp(nn.Module):
    def __init__(self, options):
        super().__init__()
        dims = options["dims"]
        self.activation = options.get("activation", "relu")
        self.layers = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))

    def forward(self, inputs):
        activate = {"relu": F.relu, "tanh": torch.tanh,
                    "gelu": lambda t: F.gelu(t, approximate="none")}[self.activation]
        x = inputs
        for layer in self.layers[:-1]:  # hidden blocks: a layer and its activation
            x = run_block(self, lambda t, layer=layer: activate(layer(t)), x)
        return self.layers[-1](x)  # the head, never checkpointed

    @staticmethod
    def loss_sum(outputs, batch):
        if not batch.targets.is_floating_point():  # classification: summed cross entropy
            return -outputs.log_softmax(dim=1).gather(1, batch.targets.unsqueeze(1)).sum()
        return (outputs - batch.targets).square().mean(dim=1).sum()


class GptBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d, eps=1e-5)
        self.attn_qkv = nn.Linear(d, 3 * d)
        self.attn_out = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp_in = nn.Linear(d, 4 * d)
        self.mlp_out = nn.Linear(4 * d, d)

    def forward(self, x, allowed):
        n, s, d = x.shape
        head_dim = d // self.heads
        split = lambda t: t.reshape(n, s, self.heads, head_dim).transpose(1, 2)
        q, k, v = (split(t) for t in self.attn_qkv(self.ln1(x)).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
        probs = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        attended = (probs @ v).transpose(1, 2).reshape(n, s, d)
        h = x + self.attn_out(attended)
        return h + self.mlp_out(F.gelu(self.mlp_in(self.ln2(h)), approximate="none"))


class Gpt(nn.Module):
    def __init__(self, options):
        super().__init__()
        d = options["d_model"]
        self.token_embedding = nn.Embedding(options["vocab_size"], d)
        self.position_embedding = nn.Embedding(options["max_seq_len"], d)
        self.blocks = nn.ModuleList(GptBlock(d, options["heads"]) for _ in range(options["layers"]))
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.head = nn.Linear(d, options["vocab_size"])

    def forward(self, inputs):
        n, s = inputs.shape
        causal = torch.ones(s, s, dtype=torch.bool, device=inputs.device).tril()
        allowed = causal & (inputs != 0).view(n, 1, 1, s)
        x = self.token_embedding(inputs) + self.position_embedding.weight[:s]
        for block in self.blocks:
            x = run_block(self, block, x, allowed)
        return self.head(self.ln_f(x))

    @staticmethod
    def loss_sum(outputs, batch):
        target_log_probs = outputs.log_softmax(dim=-1).gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)
        return -target_log_probs.masked_select(batch.mask).sum()


def is_within(name, entry):
    """Whether parameter `name` is `entry` or inside the module it names (scenario "frozen")."""
    return name == entry or name.startswith(entry + ".")


def parameter_groups(module, groups):
    """A scenario's "parameter_groups" as a script builds them for deepspeed.initialize: torch
    param group dicts of the trainable parameters, selected by "params" (names or module paths),
    "names_containing" (substrings) or neither (every parameter no other group holds). A group's
    "weight_decay" and "lr" are passed only where the scenario writes them: the optimizer's
    defaults apply otherwise, as they do for the script."""
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]

    def selects(group, name):
        return (any(is_within(name, entry) for entry in group.get("params", [])) or
                any(part in name for part in group.get("names_containing", [])))

    explicit = [g for g in groups if "params" in g or "names_containing" in g]
    result = []
    for group in groups:
        if group in explicit:
            chosen = [p for n, p in named if selects(group, n)]
        else:
            chosen = [p for n, p in named if not any(selects(g, n) for g in explicit)]
        entry = {"params": chosen}
        for key in ("weight_decay", "lr"):  # LLaVA's mm_projector_lr is a group "lr"
            if key in group:
                entry[key] = group[key]
        result.append(entry)
    return result


def client_optimizer(spec, parameters):
    """A scenario's "client_optimizer": the torch.optim class a script builds itself, with the
    scenario's params and torch's defaults for the rest (AdamW's weight decay 0.01)."""
    classes = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}
    params = dict(spec.get("params", {}))
    if "betas" in params:
        params["betas"] = tuple(params["betas"])
    return classes[spec["type"]](parameters, **params)


def trainer_adamw(module, spec):
    """The torch AdamW the Hugging Face Trainer builds when the DeepSpeed config has no
    optimizer (transformers 5.24.0 Trainer.create_optimizer): biases and LayerNorm parameters in
    a group without weight decay, every other trainable parameter in one with it."""
    no_decay = set()
    for module_name, sub in module.named_modules():
        for name, _ in sub.named_parameters(recurse=False):
            full = f"{module_name}.{name}" if module_name else name
            if isinstance(sub, nn.LayerNorm) or "bias" in name:
                no_decay.add(full)
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if n not in no_decay],
               "weight_decay": spec["weight_decay"]},
              {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=spec["lr"], betas=tuple(spec["betas"]), eps=spec["eps"])


def initialise_as_trainrepro(module, seed):
    """models/build_model.cpp's initialisation: float64, modules in pre-order, one CPU generator
    seeded with the model seed (ATen's and torch's CPU generators are the same)."""
    generator = torch.Generator().manual_seed(seed)
    module.double()
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, nn.Linear):
                bound = 1.0 / math.sqrt(sub.weight.size(1))
                sub.weight.uniform_(-bound, bound, generator=generator)
                sub.bias.uniform_(-bound, bound, generator=generator)
            elif isinstance(sub, nn.Embedding):
                sub.weight.normal_(0.0, 0.02, generator=generator)
            elif isinstance(sub, nn.LayerNorm):
                sub.weight.fill_(1.0)
                sub.bias.fill_(0.0)


def trainable(module):
    """The parameters that require grad, in order: what the golden records."""
    return [p for p in module.parameters() if p.requires_grad]


def build_model(model, names, initial, dtype):
    """The zoo model with the golden's initial parameters (float64 in the file) cast to dtype.
    Frozen parameters (requires_grad_(False)) are not in the golden: they take trainrepro's
    seeded initialisation, which must then reproduce the golden's trainable ones exactly."""
    kinds = {"mlp": Mlp, "gpt": Gpt}
    if model["name"] not in kinds:
        raise ValueError(f"the oracle does not know the model {model['name']!r}")
    module = kinds[model["name"]](model["options"])
    frozen = model.get("frozen", [])
    if frozen:
        initialise_as_trainrepro(module, model.get("seed", 0))
        for name, parameter in module.named_parameters():
            if any(is_within(name, entry) for entry in frozen):
                parameter.requires_grad_(False)
            elif not torch.equal(parameter, initial[name].double()):
                raise ValueError(f"the seeded initialisation differs from the golden at {name}")
    module = module.to(dtype)
    own = [name for name, p in module.named_parameters() if p.requires_grad]
    if own != list(names):
        raise ValueError(f"parameter names differ from the golden's: {own} vs {list(names)}")
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if parameter.requires_grad:
                parameter.copy_(initial[name])
    return module


MODEL_DEFAULTS = {  # models/README.md
    "mlp": {"dims": [16, 64, 4], "activation": "relu"},
    "gpt": {"vocab_size": 64, "max_seq_len": 16, "d_model": 32, "heads": 4, "layers": 2},
}


DATA_DEFAULTS = {  # models/README.md
    "classification": {"features": 16, "classes": 4},
    "regression": {"features": 16, "outputs": 1, "noise": 0.1},
    "token_sequences": {"vocab_size": 64, "min_length": 2, "max_length": 16},
}


def data_with_defaults(data):
    options = dict(DATA_DEFAULTS.get(data["name"], {}))
    options.update(data.get("options", {}))
    return {"name": data["name"], "options": options, "seed": data.get("seed", 0)}


def build_model_with_defaults(model):
    """The scenario's model with its own random initialisation (for configs that never train)."""
    options = dict(MODEL_DEFAULTS.get(model["name"], {}))
    options.update(model.get("options", {}))
    return {"mlp": Mlp, "gpt": Gpt}[model["name"]](options)


def gradient_of_sum(module, source, begin, end):
    """Gradients of the summed per-item loss over samples [begin, end), float64, and the items."""
    module.zero_grad(set_to_none=True)
    batch = source.samples(begin, end, torch.float64)
    module.loss_sum(module(batch.inputs), batch).backward()
    grads = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
             for p in trainable(module)]
    module.zero_grad(set_to_none=True)
    return grads, batch.items
