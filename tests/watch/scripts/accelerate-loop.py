"""The loop as Hugging Face Accelerate documents it under DeepSpeed: Accelerator with a
DeepSpeedPlugin, the script's own torch optimizer and scheduler, `with accelerator.accumulate(model)`
around each micro-step, accelerator.backward(loss), then optimizer.step(), scheduler.step() and
optimizer.zero_grad() after every backward (under DeepSpeed accelerate 1.15.0 makes those three
no-ops: accelerator.backward tells the engine whether this micro-step is the boundary, and steps
the engine there). Needs the real accelerate (tests/watch/hf_trainer_python).

--divide-loss: the loss divided by the accumulation steps before accelerator.backward, as
gradient accumulation without DeepSpeed is often written; DeepSpeed divides it again.
--clip: accelerator.clip_grad_norm_ every micro-step, as the accelerate examples do (a no-op under
DeepSpeed, which clips with the config's gradient_clipping).
--epoch-batches N: the micro-batches come from a DataLoader prepared by accelerate, N per rank
and epoch, epochs repeated until --steps windows have run: where N is not a multiple of --gas,
accelerate ends the window at the epoch's last micro-batch.
--windows-across-epochs: GradientAccumulationPlugin(sync_with_dataloader=False), accelerate's own
way to keep every window whole when an epoch is not.
"""
import os

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from accelerate import Accelerator, DeepSpeedPlugin  # noqa: E402
from accelerate.utils import GradientAccumulationPlugin  # noqa: E402

import common  # noqa: E402


def arguments():
    parser = common.parser()
    parser.add_argument("--divide-loss", action="store_true")
    parser.add_argument("--clip", action="store_true")
    parser.add_argument("--epoch-batches", type=int)
    parser.add_argument("--windows-across-epochs", action="store_true")
    return parser.parse_args()


def dataset(count):
    generator = torch.Generator().manual_seed(1234)
    return torch.utils.data.TensorDataset(torch.randn(count, 16, generator=generator),
                                          torch.randint(0, 4, (count,), generator=generator))


def main():
    args = arguments()
    torch.set_num_threads(1)
    ds_config = {"train_micro_batch_size_per_gpu": args.micro_batch,
                 "gradient_accumulation_steps": args.gas, "gradient_clipping": 0.0,
                 "zero_optimization": {"stage": args.zero}}
    accumulation = GradientAccumulationPlugin(
        num_steps=args.gas, sync_with_dataloader=not args.windows_across_epochs)
    accelerator = Accelerator(gradient_accumulation_plugin=accumulation,
                              deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=ds_config))
    model = common.model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    rank, world_size = accelerator.process_index, accelerator.num_processes
    if args.epoch_batches:
        loader = accelerator.prepare(torch.utils.data.DataLoader(
            dataset(args.epoch_batches * args.micro_batch * world_size),
            batch_size=args.micro_batch))
        batches = (batch for _ in range(args.steps) for batch in loader)
    else:
        batches = common.batches(args, rank, world_size)
    for x, y in batches:
        if model.global_steps >= args.steps:
            break
        with accelerator.accumulate(model):
            loss = F.cross_entropy(model(x), y)
            if args.divide_loss:
                loss = loss / args.gas
            accelerator.backward(loss)
            if args.clip:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
