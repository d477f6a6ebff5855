"""Steps the optimizer deepspeed.initialize returned after every backward, as a plain PyTorch
loop does: DeepSpeed's accumulation is bypassed."""
import deepspeed
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for step, (x, y) in enumerate(common.batches(args, rank, world_size)):
    if step >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
