"""Steps the scheduler from the config after every micro-batch, as in plain PyTorch; DeepSpeed
already steps it at every boundary."""
import deepspeed
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, scheduler = deepspeed.initialize(
    model=model, model_parameters=model.parameters(), config=common.ds_config(args))
rank, world_size = common.rank_and_world()
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    engine.step()
    scheduler.step()
