"""Zeroes gradients before every forward, as a plain PyTorch loop does once per step: inside
DeepSpeed's accumulation window this throws away every micro-batch but the last."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    optimizer.zero_grad()
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    engine.step()
