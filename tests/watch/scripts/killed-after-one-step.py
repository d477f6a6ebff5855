"""Bad input for watch: a correct loop whose rank 0 is killed by SIGKILL (as the kernel's
out-of-memory killer would) after one optimizer step, before any rank wrote its recording: the
verdict says the engines were created and which rank which signal killed (before: "no DeepSpeed
engine was created ... without calling deepspeed.initialize")."""
import os
import signal

import torch.nn.functional as F

import common

args = common.arguments()
model = common.model()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps == 1 and rank == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    engine.backward(F.cross_entropy(engine(x), y))
    engine.step()
