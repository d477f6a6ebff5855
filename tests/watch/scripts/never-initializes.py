"""Bad input for watch: a script that trains with plain PyTorch and never creates a DeepSpeed
engine."""
import torch
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step, (x, y) in enumerate(common.batches(args, 0, 1)):
    if step >= args.steps:
        break
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
