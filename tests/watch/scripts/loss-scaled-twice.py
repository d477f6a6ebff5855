"""Divides the loss by the accumulation steps itself, as a plain PyTorch loop must; but
engine.backward divides it again."""
import deepspeed
import torch

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=common.ds_config(args))
criterion = torch.nn.CrossEntropyLoss()
rank, world_size = common.rank_and_world()
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = criterion(engine(x), y) / args.gas
    engine.backward(loss)
    engine.step()
