"""Skips the all-reduce inside the accumulation window with engine.no_sync(), the way a DDP loop
does, but with the condition off by one: the window's first backward syncs and the others,
the boundary's included, run inside no_sync(). DeepSpeed (ZeRO 0) reduces only at the boundary,
so no reduction ever happens: each rank steps on its own gradient and the replicas drift apart.
On one rank there is nothing to reduce and the run is correct."""
import contextlib

import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for micro_step, (x, y) in enumerate(common.batches(args, rank, world_size)):
    if engine.global_steps >= args.steps:
        break
    first_of_window = micro_step % args.gas == 0
    with contextlib.nullcontext() if first_of_window else engine.no_sync():
        loss = F.cross_entropy(engine(x), y)
        engine.backward(loss)
    engine.step()
