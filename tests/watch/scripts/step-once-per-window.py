"""Calls engine.step() once per accumulation window, as the optimizer is stepped in plain PyTorch;
DeepSpeed counts every step() call as a micro-step, so its boundary comes GAS times too late."""
import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for micro_step, (x, y) in enumerate(common.batches(args, rank, world_size)):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x), y)
    engine.backward(loss)
    if (micro_step + 1) % args.gas == 0:
        engine.step()
