"""Bad input for watch: a correct loop that raises after two optimizer steps (what it recorded
before is still judged)."""
import deepspeed
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=common.ds_config(args))
rank, world_size = common.rank_and_world()
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps == 2:
        raise ValueError("the data loader ran out of shards")
    engine.backward(F.cross_entropy(engine(x), y))
    engine.step()
