"""Calls loss.backward() as in plain PyTorch, then engine.step(): DeepSpeed's division by
gradient_accumulation_steps (in engine.backward) never happens."""
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
    loss = F.cross_entropy(engine(x), y)
    loss.backward()
    engine.step()
