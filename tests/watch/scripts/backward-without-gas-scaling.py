"""Passes scale_wrt_gas=False to engine.backward (as the Hugging Face Trainer does, whose loss is
already divided) with a loss it never divided: DeepSpeed sums the micro-batches' means."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss, scale_wrt_gas=False)
    engine.step()
