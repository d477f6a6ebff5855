"""nanoGPT's GPT (tests/watch/models/nanogpt/model.py, karpathy/nanoGPT as its author wrote it)
trained by a DeepSpeed loop: `logits, loss = engine(x, y)`, the loss the model computes in its own
forward (F.cross_entropy over every token, ignore_index=-1). --size small (2 layers, 16 wide: the
test suite's) or gpt2 (nanoGPT's default GPTConfig: GPT-2 124M, block 1024, vocabulary 50304;
--length sets the tokens per sample). Planted bugs: common.model_parser()'s."""
import sys

import torch

import common

sys.path.insert(0, common.MODELS)
from nanogpt.model import GPT, GPTConfig  # noqa: E402

parser = common.model_parser(sizes=("small", "gpt2"))
parser.add_argument("--length", type=int, default=8)
args = parser.parse_args()
torch.manual_seed(0)
if args.size == "small":
    config = GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
else:
    config = GPTConfig(dropout=0.0)  # nanoGPT's defaults: GPT-2 124M
common.train_language_model(args, GPT(config), config.vocab_size)
