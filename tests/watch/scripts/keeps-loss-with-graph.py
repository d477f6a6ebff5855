"""Keeps every micro-batch's loss tensor for logging: each keeps its autograd graph alive."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
losses = []
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    engine.step()
    losses.append(loss)
print("mean loss", sum(l.item() for l in losses) / len(losses))
