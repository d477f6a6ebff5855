"""Trains a tiny GPT-2 (built from a config: nothing is downloaded) with the real Hugging Face
Trainer and a ds_config of "auto" values, on sequences of different lengths (padding labelled
-100). With --per-micro-batch-mean, a custom compute_loss takes each micro-batch's own token
mean, as transformers did before 4.46; without it the Trainer divides the window's summed token
loss by its tokens (num_items_in_batch). --model llama (LlamaForCausalLM, the default) or gpt2
(GPT2LMHeadModel: transformers 5.24.0 counts its num_items_in_batch over every label, the first
of each row included, which a causal LM never predicts; --loss-type ForCausalLM fixes it).
use_cpu=True: without CUDA, accelerate 1.15.0's PartialState sees a single process unless told the
run is on the CPU (state.py _prepare_backend), and at 2 ranks the Trainer's train_batch_size then
fails DeepSpeed's batch assertion (8 != 2 * 4 * 2)."""
import argparse
import os
import shutil
import tempfile

os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed  # noqa: E402
import torch  # noqa: E402
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,  # noqa: E402
                          Trainer, TrainingArguments)


class Sequences(torch.utils.data.Dataset):
    def __init__(self, count, length=8, vocabulary=64):
        generator = torch.Generator().manual_seed(5)
        self.ids = torch.randint(0, vocabulary, (count, length), generator=generator)
        self.real = torch.randint(2, length + 1, (count,), generator=generator)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        mask = torch.arange(self.ids.shape[1]) < self.real[i]
        return {"input_ids": self.ids[i], "attention_mask": mask.long(),
                "labels": self.ids[i].masked_fill(~mask, -100)}


class PerMicroBatchMeanTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)  # the model's own loss: the mean over this micro-batch's tokens
        return (outputs.loss, outputs) if return_outputs else outputs.loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-micro-batch-mean", action="store_true")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--zero", type=int, default=0, help="the ds_config's ZeRO stage (at 3 "
                        "with stage3_param_persistence_threshold 0: every parameter partitioned)")
    parser.add_argument("--gradient-checkpointing", action="store_true",
                        help="TrainingArguments(gradient_checkpointing=True)")
    parser.add_argument("--no-average-tokens", action="store_true",
                        help="TrainingArguments(average_tokens_across_devices=False)")
    parser.add_argument("--samples", type=int, default=64,
                        help="the dataset's size: 20 makes each epoch 2 windows and a half")
    parser.add_argument("--model", choices=("llama", "gpt2"), default="llama")
    parser.add_argument("--loss-type", help="set model.loss_type (ForCausalLM: GPT-2's fix)")
    parser.add_argument("--bf16", action="store_true",
                        help="TrainingArguments(bf16=True), the ds_config's bf16 enabled \"auto\"")
    args = parser.parse_args()
    torch.set_num_threads(1)
    deepspeed.init_distributed(dist_backend="gloo")
    torch.manual_seed(0)
    if args.model == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1,
                                           n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
                                           attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))
    else:
        model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                                             num_hidden_layers=1, num_attention_heads=2,
                                             num_key_value_heads=2, max_position_embeddings=16,
                                             bos_token_id=0, eos_token_id=0, pad_token_id=0))
    ds_config = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
                 "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
                 "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
                 "zero_optimization": {"stage": args.zero}}
    if args.bf16:
        ds_config["bf16"] = {"enabled": "auto"}
    if args.zero == 3:
        ds_config["zero_optimization"]["stage3_param_persistence_threshold"] = 0
    if args.loss_type:
        model.loss_type = args.loss_type
    output_dir = tempfile.mkdtemp(prefix="hf-trainer-")
    try:
        training = TrainingArguments(
            output_dir=output_dir, deepspeed=ds_config, max_steps=args.steps,
            per_device_train_batch_size=2, gradient_accumulation_steps=4, learning_rate=1e-3,
            max_grad_norm=0.0, train_sampling_strategy="sequential",
            lr_scheduler_type="constant", report_to="none", save_strategy="no",
            disable_tqdm=True, dataloader_num_workers=0, seed=0, use_cpu=True,
            average_tokens_across_devices=not args.no_average_tokens,
            gradient_checkpointing=args.gradient_checkpointing, bf16=args.bf16)
        kind = PerMicroBatchMeanTrainer if args.per_micro_batch_mean else Trainer
        kind(model=model, args=training, train_dataset=Sequences(args.samples)).train()
    finally:
        shutil.rmtree(output_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
