"""Calls loss.backward() as in plain PyTorch, then engine.step(): DeepSpeed's division by
gradient_accumulation_steps (in engine.backward) never happens."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    loss.backward()
    engine.step()
