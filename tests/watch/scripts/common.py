"""What the watched scripts share, as a user's project shares its model and data files: a small
classifier, a synthetic dataset, and the command line every script takes.

Each script is a real DeepSpeed training loop written against DeepSpeed's public API (nothing of
trainrepro's): `python SCRIPT [--gas N] [--micro-batch N] [--steps N]`, or under torchrun /
`python -m torch.distributed.run --nproc_per_node 2 SCRIPT`.
"""
import argparse
import os

import torch

os.environ.setdefault("DS_ACCELERATOR", "cpu")


def arguments():
    return parser().parse_args()


def parser():
    """The command line every script takes; a script adds its own options to it."""
    command_line = argparse.ArgumentParser()
    command_line.add_argument("--local_rank", type=int, default=-1,
                              help="passed by DeepSpeed's launcher (`deepspeed train.py`)")
    command_line.add_argument("--gas", type=int, default=4)
    command_line.add_argument("--micro-batch", type=int, default=4)
    command_line.add_argument("--steps", type=int, default=6)
    command_line.add_argument("--no-gas-in-config", action="store_true")
    command_line.add_argument("--zero", type=int, default=0)
    command_line.add_argument("--persistence-threshold", type=int,
                              help="stage3_param_persistence_threshold (0: every parameter "
                                   "partitioned; DeepSpeed's default 1e5 keeps this model's whole)")
    command_line.add_argument("--scheduler", action="store_true", help="WarmupLR in the config")
    return command_line


class Classifier(torch.nn.Module):
    def __init__(self, features=16, hidden=32, classes=4):
        super().__init__()
        self.hidden = torch.nn.Linear(features, hidden)
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))


def model():
    torch.manual_seed(0)
    return Classifier()


def ds_config(args, **extra):
    config = {"train_micro_batch_size_per_gpu": args.micro_batch,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
              "gradient_clipping": 0.0, "zero_optimization": {"stage": args.zero}}
    if args.persistence_threshold is not None:
        config["zero_optimization"]["stage3_param_persistence_threshold"] = \
            args.persistence_threshold
    if args.scheduler:
        config["scheduler"] = {"type": "WarmupLR",
                               "params": {"warmup_num_steps": 10, "warmup_max_lr": 1e-3}}
    if not args.no_gas_in_config:
        config["gradient_accumulation_steps"] = args.gas
    config.update(extra)
    return config


def batches(args, rank, world_size):
    """This rank's micro-batches, as a DistributedSampler would deal them."""
    generator = torch.Generator().manual_seed(1234)
    count = (args.steps + 1) * args.gas * args.micro_batch * world_size
    x = torch.randn(count, 16, generator=generator)
    y = torch.randint(0, 4, (count,), generator=generator)
    mb = args.micro_batch
    for first in range(rank * mb, count - mb + 1, world_size * mb):
        yield x[first:first + mb], y[first:first + mb]


def rank_and_world():
    import torch.distributed as dist
    return dist.get_rank(), dist.get_world_size()


def initialize(args, model, **config_extra):
    """deepspeed.initialize with this project's config: (engine, optimizer, scheduler, rank,
    world size)."""
    import deepspeed
    engine, optimizer, _, scheduler = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=ds_config(args, **config_extra))
    return (engine, optimizer, scheduler) + rank_and_world()


class Tagger(torch.nn.Module):
    """A token tagger: a class per token of each sequence."""

    def __init__(self, features=8, hidden=16, classes=5):
        super().__init__()
        self.hidden = torch.nn.Linear(features, hidden)
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, tokens):
        return self.out(torch.relu(self.hidden(tokens)))


def tagger():
    torch.manual_seed(0)
    return Tagger()


def token_batches(args, rank, world_size, length=6):
    """Sequences padded to `length`, their padding labelled -100: micro-batches hold different
    numbers of real tokens, as a language model's do."""
    generator = torch.Generator().manual_seed(99)
    count = (args.steps + 1) * args.gas * args.micro_batch * world_size
    x = torch.randn(count, length, 8, generator=generator)
    y = torch.randint(0, 5, (count, length), generator=generator)
    real = torch.randint(1, length + 1, (count,), generator=generator)
    y[torch.arange(length)[None, :] >= real[:, None]] = -100
    mb = args.micro_batch
    for first in range(rank * mb, count - mb + 1, world_size * mb):
        yield x[first:first + mb], y[first:first + mb]


# Models written by others (tests/watch/models/, issue 51): the scripts model-*.py train them with
# the loop below; each script owns its model's construction and its loss.
MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")


def model_parser(sizes=("small",)):
    """parser() and what every model-*.py script takes: --size (small for the test suite; a
    script's realistic sizes as it names them) and the planted loop bugs."""
    command_line = parser()
    command_line.add_argument("--size", choices=sizes, default=sizes[0])
    command_line.add_argument("--divide-loss", action="store_true",
                              help="planted bug: the loss divided by the accumulation steps "
                                   "before engine.backward, which divides it again")
    command_line.add_argument("--zero-grad-every-micro-step", action="store_true",
                              help="planted bug: optimizer.zero_grad() before every backward")
    command_line.add_argument("--no-scale-wrt-gas", action="store_true",
                              help="planted bug: engine.backward(loss, scale_wrt_gas=False) on "
                                   "a loss not divided by the accumulation steps")
    return command_line


def backward_and_step(engine, loss, args):
    """The end of a micro-step as DeepSpeed documents it (engine.backward, engine.step after
    every backward), with the planted bug args asks for."""
    if args.divide_loss:
        loss = loss / args.gas
    if args.zero_grad_every_micro_step:
        engine.optimizer.zero_grad()
    if args.no_scale_wrt_gas:
        engine.backward(loss, scale_wrt_gas=False)
    else:
        engine.backward(loss)
    engine.step()


def token_id_batches(args, rank, world_size, vocabulary, length):
    """This rank's micro-batches of token ids (micro batch, length), as a DistributedSampler
    would deal them: a language model's inputs, its targets the same ids shifted by one."""
    generator = torch.Generator().manual_seed(4321)
    count = (args.steps + 1) * args.gas * args.micro_batch * world_size
    ids = torch.randint(0, vocabulary, (count, length + 1), generator=generator)
    mb = args.micro_batch
    for first in range(rank * mb, count - mb + 1, world_size * mb):
        yield ids[first:first + mb, :-1].clone(), ids[first:first + mb, 1:].clone()


def train_language_model(args, model, vocabulary):
    """The loop of nanoGPT's and minGPT's train.py: the model computes its own loss from
    (tokens, targets) and returns (logits, loss); engine.backward and engine.step after every
    micro-batch, with the planted bug args asks for."""
    engine, _, _, rank, world_size = initialize(args, model)
    for x, y in token_id_batches(args, rank, world_size, vocabulary, args.length):
        if engine.global_steps >= args.steps:
            break
        _, loss = engine(x, y)
        backward_and_step(engine, loss, args)
