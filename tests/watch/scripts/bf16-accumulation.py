"""The loop as DeepSpeed documents it, in bfloat16 ("bf16": {"enabled": true}; the loop casts its
inputs, as the model's weights are bfloat16). --divide-loss also divides the loss by the
accumulation steps, which engine.backward does again. --fp32-accumulation sums the window's
gradients in float32 ("data_types": {"grad_accum_dtype": "fp32"}; DeepSpeed 0.19.8 refuses it at
ZeRO stage 0); without it DeepSpeed 0.19.8 sums them in bfloat16, the model's dtype."""
import deepspeed
import torch.nn.functional as F

import common

parser = common.parser()
parser.add_argument("--divide-loss", action="store_true")
parser.add_argument("--fp32-accumulation", action="store_true")
args = parser.parse_args()
model = common.model()
config = common.ds_config(args, bf16={"enabled": True})
if args.fp32_accumulation:
    config["data_types"] = {"grad_accum_dtype": "fp32"}
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                       config=config)
rank, world_size = common.rank_and_world()
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    loss = F.cross_entropy(engine(x.bfloat16()), y)
    if args.divide_loss:
        loss = loss / args.gas
    engine.backward(loss)
    engine.step()
