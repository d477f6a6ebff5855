"""A token loss averaged over each micro-batch's own tokens (what transformers did before 4.46):
micro-batches with few real tokens weigh as much as those with many."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.tagger()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for x, y in common.token_batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    logits = engine(x)
    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1), ignore_index=-100)
    engine.backward(loss)
    engine.step()
