"""Steps the scheduler from the config after every micro-batch, as in plain PyTorch; DeepSpeed
already steps it at every boundary."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, scheduler, rank, world_size = common.initialize(args, model)
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    engine.step()
    scheduler.step()
