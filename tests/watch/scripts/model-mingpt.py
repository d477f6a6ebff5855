"""minGPT's GPT (tests/watch/models/mingpt/, karpathy/minGPT as its author wrote it: attention
masked by a float `bias` buffer, softmax written out) trained by a DeepSpeed loop:
`logits, loss = engine(x, y)`, the loss the model computes in its own forward. --size small (2
layers, 16 wide), or minGPT's own model_type gpt-mini (6 layers, 192 wide) or gpt2 (124M), with
GPT-2's block 1024 and vocabulary 50257.
--dropout P: minGPT's embd/resid/attn_pdrop (its default is 0.1; 0 here unless asked).
Planted bugs: common.model_parser()'s."""
import sys

import torch

import common

sys.path.insert(0, common.MODELS)
from mingpt.model import GPT  # noqa: E402

parser = common.model_parser(sizes=("small", "gpt-mini", "gpt2"))
parser.add_argument("--length", type=int, default=8)
parser.add_argument("--dropout", type=float, default=0.0)
args = parser.parse_args()
torch.manual_seed(0)
config = GPT.get_default_config()
if args.size == "small":
    config.model_type = None
    config.n_layer, config.n_head, config.n_embd = 2, 2, 16
    config.vocab_size, config.block_size = 64, 16
else:
    config.model_type = args.size
    config.vocab_size, config.block_size = 50257, 1024
config.embd_pdrop = config.resid_pdrop = config.attn_pdrop = args.dropout
common.train_language_model(args, GPT(config), config.vocab_size)
