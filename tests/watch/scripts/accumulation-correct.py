"""The loop as DeepSpeed documents it: engine(x), engine.backward(loss), engine.step() after
every backward; DeepSpeed divides by gradient_accumulation_steps and steps at the boundary."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for step, (x, y) in enumerate(common.batches(args, rank, world_size)):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    engine.step()
