"""The shape of DeepSpeed's own tutorials (DeepSpeedExamples cifar10_deepspeed.py): argparse with
deepspeed.add_config_arguments, the config a file named by `--deepspeed --deepspeed_config FILE`
(deepspeed-tutorial.json: train_batch_size 32, micro batch 4, ZeRO 1), the data loader made by
deepspeed.initialize(training_data=...), epochs until --steps optimizer steps.

--module-forward: the loop calls engine.module(x), the engine's module itself (DeepSpeed's hooks
are on the module: it trains as engine(x) does).
--forward-method: the loop calls engine.module.forward(x), which skips every module hook; the
watch sees no micro-batch and says so.
--divide-loss: the loss divided by the accumulation steps before engine.backward.
"""
import argparse
import os

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import common  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--module-forward", action="store_true")
    parser.add_argument("--forward-method", action="store_true")
    parser.add_argument("--divide-loss", action="store_true")
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)
    deepspeed.init_distributed(dist_backend="gloo")
    model = common.model()
    generator = torch.Generator().manual_seed(3)
    data = torch.utils.data.TensorDataset(torch.randn(512, 16, generator=generator),
                                          torch.randint(0, 4, (512,), generator=generator))
    engine, _, loader, _ = deepspeed.initialize(args=args, model=model,
                                                model_parameters=model.parameters(),
                                                training_data=data)
    forward = engine
    if args.module_forward:
        forward = engine.module
    if args.forward_method:
        forward = engine.module.forward
    while engine.global_steps < args.steps:
        for x, y in loader:
            loss = F.cross_entropy(forward(x), y)
            if args.divide_loss:
                loss = loss / engine.gradient_accumulation_steps()
            engine.backward(loss)
            engine.step()
            if engine.global_steps >= args.steps:
                break


if __name__ == "__main__":
    main()
