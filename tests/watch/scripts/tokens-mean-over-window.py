"""The token loss as transformers computes it since 4.46 (num_items_in_batch): each micro-batch's
summed token loss divided by the real tokens of the whole window on every rank, times what
DeepSpeed divides by again (gradient_accumulation_steps, and the ranks it averages)."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

import common

args = common.arguments()
model = common.tagger()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
batches = list(common.token_batches(args, rank, world_size))
for first in range(0, len(batches) - args.gas + 1, args.gas):
    if engine.global_steps >= args.steps:
        break
    window = batches[first:first + args.gas]
    tokens = torch.tensor(float(sum(int((y != -100).sum()) for _, y in window)))
    dist.all_reduce(tokens)
    for x, y in window:
        logits = engine(x)
        summed = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1),
                                 ignore_index=-100, reduction="sum")
        engine.backward(summed * args.gas * world_size / tokens)
        engine.step()
