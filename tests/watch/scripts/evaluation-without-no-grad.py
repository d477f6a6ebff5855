"""Evaluates after every optimizer step without torch.no_grad() and sums the loss as a tensor:
every evaluation's graph stays reachable from the running sum."""
import torch
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
held_out = torch.randn(8, 16, generator=torch.Generator().manual_seed(7))
held_out_labels = torch.randint(0, 4, (8,), generator=torch.Generator().manual_seed(8))
evaluation_loss = 0.0
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    steps_before = engine.global_steps
    engine.backward(F.cross_entropy(engine(x), y))
    engine.step()
    if engine.global_steps > steps_before:
        evaluation_loss = evaluation_loss + F.cross_entropy(engine.module(held_out),
                                                            held_out_labels)
print("evaluation loss", float(evaluation_loss))
