"""Zeroes gradients before every forward, as a plain PyTorch loop does once per step: inside
DeepSpeed's accumulation window this throws away every micro-batch but the last."""
import deepspeed
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=common.ds_config(args))
rank, world_size = common.rank_and_world()
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    optimizer.zero_grad()
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    engine.step()
