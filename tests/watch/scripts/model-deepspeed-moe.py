"""DeepSpeed 0.19.8's own mixture-of-experts layer (deepspeed.moe.layer.MoE: a top-k gate, 4
experts, one expert-parallel rank each) between an embedding and a classifier head, trained as
DeepSpeed's MoE tutorial says: the optimizer's parameter groups split by
split_params_into_different_moe_groups_for_optimizer, and the loss the loop's cross entropy plus
--aux-coef times the layer's load-balancing loss (l_aux; 0 leaves it out). use_rts=False (random
token selection draws in the forward, which the golden's float64 copy would draw again);
capacity_factor 4 and min_capacity 0: a micro-batch of 4 tokens, none dropped.
Planted bugs: common.model_parser()'s."""
import deepspeed
import torch
import torch.nn.functional as F
from deepspeed.moe.layer import MoE
from deepspeed.moe.utils import split_params_into_different_moe_groups_for_optimizer

import common

parser = common.model_parser()
parser.add_argument("--aux-coef", type=float, default=0.01)
parser.add_argument("--top-k", type=int, default=1)
args = parser.parse_args()


class MoEClassifier(torch.nn.Module):
    def __init__(self, features=16, hidden=16, classes=4, experts=4):
        super().__init__()
        self.embed = torch.nn.Linear(features, hidden)
        expert = torch.nn.Sequential(torch.nn.Linear(hidden, 32), torch.nn.GELU(),
                                     torch.nn.Linear(32, hidden))
        self.moe = MoE(hidden_size=hidden, expert=expert, num_experts=experts, ep_size=1,
                       k=args.top_k, capacity_factor=float(experts), min_capacity=0,
                       use_rts=False)
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, x):
        mixed, l_aux, _ = self.moe(torch.tanh(self.embed(x)))
        return self.out(mixed), l_aux


deepspeed.init_distributed(dist_backend="gloo")
torch.manual_seed(0)
model = MoEClassifier()
groups = split_params_into_different_moe_groups_for_optimizer(
    {"params": list(model.parameters()), "name": "parameters"})
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=groups,
                                       config=common.ds_config(args))
rank, world_size = common.rank_and_world()
for x, y in common.batches(args, rank, world_size):
    if engine.global_steps >= args.steps:
        break
    logits, l_aux = engine(x)
    loss = F.cross_entropy(logits, y)
    if args.aux_coef:
        loss = loss + args.aux_coef * l_aux
    common.backward_and_step(engine, loss, args)
