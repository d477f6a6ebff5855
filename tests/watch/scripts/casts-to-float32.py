"""Bad input for watch --golden float64: a model whose forward casts to float32 itself, so no
float64 copy of it can be run: the verdict says the golden could not be computed, and why. The
default golden (the run's own dtype and kernels) judges it."""
import torch
import torch.nn.functional as F

import common


class CastingClassifier(common.Classifier):
    def forward(self, x):
        return super().forward(x).to(torch.float32)


args = common.arguments()
torch.manual_seed(0)
model = CastingClassifier()
engine, optimizer, _, rank, world_size = common.initialize(args, model)
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    engine.backward(F.cross_entropy(engine(x), y))
    engine.step()
