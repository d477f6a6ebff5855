"""A classifier trained with label smoothing (torch.nn.CrossEntropyLoss(label_smoothing=0.1), as
many fine-tuning scripts do), the loop as DeepSpeed documents it; --divide-loss also divides the
loss by the accumulation steps, which engine.backward does again."""
import deepspeed
import torch

import common

parser = common.parser()
parser.add_argument("--divide-loss", action="store_true")
args = parser.parse_args()
model = common.model()
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                       config=common.ds_config(args))
criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
rank, world_size = common.rank_and_world()
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = criterion(engine(x), y)
    if args.divide_loss:
        loss = loss / args.gas
    engine.backward(loss)
    engine.step()
