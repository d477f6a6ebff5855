"""A decoder-only GPT of nn.MultiheadAttention blocks, written as most training scripts write one:
the causal mask is built inside forward, `torch.triu(torch.full((T, T), float("-inf")), 1)`, in
float32 whatever the model's dtype. The loop is the one DeepSpeed documents (engine(x),
F.cross_entropy, engine.backward, engine.step).

Computed again in float64 this model is another function: torch 2.11's
scaled_dot_product_attention (which nn.MultiheadAttention calls) with a float32 mask and float64
query, key and value returns a wrong attention without an error. Its float64 golden therefore
fails its self-check, and the run is judged by the golden in its own dtype (issue 51).

--size small (the test's, ~30 k parameters), 27m (the issue's 27.4 M; "issue" is the same),
124m (GPT-2 small's shape: vocabulary 50257, width 768, 12 heads, 12 layers; its head is not tied
to the token embedding, so 162 M parameters, the issue's "162 M") or 350m (GPT-2 medium's shape:
width 1024, 16 heads, 24 layers; untied, 405 M), all at 128 tokens; the parameter count is printed
on rank 0. --print-step-times prints on rank 0 one line per optimizer step, `step N seconds S`:
the time from the previous step's end (or the loop's start) to the end of the engine.step() that
ended step N, so a window's micro-steps, watched or not (bench/watch/watch_memory.py reads it).
--divide-loss divides the loss by the accumulation steps as well (loss_scaled_twice);
--zero-grad-every-micro-step calls optimizer.zero_grad() before every forward
(zeroed_inside_window); --mask-in-activations-dtype builds the mask with dtype=x.dtype (the
float64 golden then passes its self-check)."""
import time

import deepspeed
import torch
import torch.nn as nn
import torch.nn.functional as F

import common

SIZES = {  # vocabulary, context, width, heads, layers
    "small": (64, 16, 32, 4, 2),
    "issue": (8192, 128, 512, 8, 6),  # the 27m's former name
    "27m": (8192, 128, 512, 8, 6),
    "124m": (50257, 128, 768, 12, 12),
    "350m": (50257, 128, 1024, 16, 24),
}


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, context, width, heads, layers):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        T = idx.size(1)
        x = self.tokens(idx) + self.positions(torch.arange(T, device=idx.device))
        mask = torch.triu(torch.full((T, T), float("-inf"), device=idx.device,
                                     dtype=x.dtype if MASK_FOLLOWS_ACTIVATIONS else None), 1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x))


def token_batches(args, rank, world_size, vocab, context):
    """This rank's micro-batches of (tokens, next tokens), as a DistributedSampler deals them."""
    generator = torch.Generator().manual_seed(7)
    count = (args.steps + 1) * args.gas * args.micro_batch * world_size
    text = torch.randint(0, vocab, (count, context + 1), generator=generator)
    mb = args.micro_batch
    for first in range(rank * mb, count - mb + 1, world_size * mb):
        yield text[first:first + mb, :-1], text[first:first + mb, 1:]


parser = common.parser()
parser.add_argument("--size", choices=sorted(SIZES), default="small")
parser.add_argument("--divide-loss", action="store_true")
parser.add_argument("--zero-grad-every-micro-step", action="store_true")
parser.add_argument("--mask-in-activations-dtype", action="store_true",
                    help="build the mask in the activations' dtype: the float64 golden's "
                         "function is then the run's")
parser.add_argument("--print-step-times", action="store_true",
                    help="rank 0 prints `step N seconds S` at each optimizer step's end")
args = parser.parse_args()
MASK_FOLLOWS_ACTIVATIONS = args.mask_in_activations_dtype
vocab, context, width, heads, layers = SIZES[args.size]
torch.manual_seed(0)
model = GPT(vocab, context, width, heads, layers)
parameters = sum(p.numel() for p in model.parameters())  # before ZeRO 3 partitions them
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                       config=common.ds_config(args))
rank, world_size = common.rank_and_world()
if rank == 0:
    print(f"parameters {parameters}", flush=True)
started = time.perf_counter()
for x, y in token_batches(args, rank, world_size, vocab, context):
    if engine.global_steps >= args.steps:
        break
    if args.zero_grad_every_micro_step:  # as a plain PyTorch loop does once per step
        engine.optimizer.zero_grad()
    logits = engine(x)
    loss = F.cross_entropy(logits.view(-1, vocab), y.reshape(-1))
    if args.divide_loss:
        loss = loss / args.gas
    engine.backward(loss)
    before = engine.global_steps
    engine.step()
    if engine.global_steps > before:
        now = time.perf_counter()
        if args.print_step_times and rank == 0:
            print(f"step {engine.global_steps} seconds {now - started:.6f}", flush=True)
        started = time.perf_counter()
