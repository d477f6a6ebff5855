#!/usr/bin/env python3
"""Writes scenarios/catalogue/: publicly reported DeepSpeed / transformers / accelerate bugs about
gradient accumulation, loss scaling, ZeRO memory and leaks, each as a pair: `<id>.json` reproduces
the bug (expects the diagnosis the harness names) and `<id>-fixed.json` applies the fix (expects
pass). Every file carries a top-level "reference" (issue or pull request, project, affected and
fixed releases); each description says how the report maps onto the harness's keys. Where a
release combined several faults,
an entry isolates one of them and its description says so. Re-run after changing them, then
`build/trainrepro golden --update scenarios/catalogue`."""
import copy
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent

MLP = {"name": "mlp", "options": {"dims": [16, 32, 4], "activation": "tanh"}, "seed": 101}
MLP_DATA = {"name": "classification", "options": {"features": 16, "classes": 4}, "seed": 102}
GPT = {"name": "gpt",
       "options": {"vocab_size": 32, "max_seq_len": 12, "d_model": 16, "heads": 2, "layers": 1},
       "seed": 121}
TOKENS = {"name": "token_sequences",
          "options": {"vocab_size": 32, "min_length": 2, "max_length": 12}, "seed": 122}
ADAMW = {"type": "AdamW", "params": {"lr": 0.001, "weight_decay": 0.01}}
PASS = {"outcome": "pass"}


def diagnosis(name):
    return {"outcome": "diagnosis", "diagnosis": name}


def reference(url, project, affected, fixed):
    assert project in ("deepspeed", "transformers", "accelerate")
    return {"url": url, "project": project, "affected": affected, "fixed": fixed}


def scenario(name, description, ref, expect, *, model, data, deepspeed, golden, tags=(),
             loop=None, hf_trainer=None, world=1, dtype="float64", version=None):
    reproduction = expect.get("outcome") != "pass"
    body = {"name": name, "description": description, "reference": ref,
            "tags": ["catalogue"] + (["reproduction"] if reproduction else ["fixed-twin"])
            + list(tags) + (["multi-rank"] if world > 1 else [])}
    if version:
        body["deepspeed_version"] = version
    body["model"] = copy.deepcopy(model)
    body["data"] = copy.deepcopy(data)
    body["deepspeed"] = copy.deepcopy(deepspeed)
    if hf_trainer:
        body["hf_trainer"] = copy.deepcopy(hf_trainer)
    body["world_size"] = world
    if dtype:
        body["dtype"] = dtype
    if loop:
        body["loop"] = copy.deepcopy(loop)
    body["golden"] = golden
    body["expect"] = expect
    return body


def pair(bug, fixed):
    for body in (bug, fixed):
        scenario_file.write_body(HERE, body)


# ---------------------------------------------------------------------------------------------
# transformers 3.1.0: Trainer.training_step returned the loss with its graph and the training
# loop summed it into a tensor (tr_loss += ...), so every step's autograd graph stayed alive.
ref = reference("https://github.com/huggingface/transformers/pull/6999", "transformers",
                "3.1.0", "3.2.0")
common = dict(model=MLP, data=MLP_DATA, dtype="float32", tags=["memory", "hf-trainer"],
              deepspeed={"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
                         "optimizer": ADAMW},
              golden={"train_batch_size": 16, "steps": 3})
pair(scenario("hf-trainer-tr-loss-keeps-graph",
              "transformers 3.1.0's Trainer (issue #6939, fixed by PR #6999): training_step "
              "returned the loss tensor itself and the loop summed it into tr_loss, so tr_loss "
              "carried the autograd history of every step and each step's graph stayed alive "
              "(RAM grew until the run was killed). Modelled as a loop keeping every loss with "
              "its graph. Fixed twin: hf-trainer-tr-loss-keeps-graph-fixed.",
              ref, diagnosis("host_memory_leak"), loop={"keep": "loss_with_graph", "steps": 40},
              **common),
     scenario("hf-trainer-tr-loss-keeps-graph-fixed",
              "The fix of transformers 3.2.0 (PR #6999): training_step returns loss.detach(), "
              "summed in place into one tensor, so nothing of a step outlives it.",
              ref, PASS, loop={"keep": "nothing", "steps": 40}, **common))

# ---------------------------------------------------------------------------------------------
# transformers 4.2.x-4.3.x DeepSpeed integration (fixed in 4.4.0 by PR #10310, which cites
# DeepSpeed issue #776). The Trainer wrote micro batch, GAS, AdamW, WarmupDecayLR and
# gradient_clipping into the DeepSpeed config itself.
TRAINER_43 = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
              "gradient_clipping": 1.0,
              "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "betas": [0.9, 0.999],
                                                        "eps": 1e-8, "weight_decay": 0.0}}}
ref = reference("https://github.com/huggingface/transformers/pull/10310", "transformers",
                "4.2.0-4.3.3", "4.4.0")
common = dict(model=MLP, data=MLP_DATA, deepspeed=TRAINER_43, tags=["hf-trainer", "accumulation"],
              golden={"train_batch_size": 16, "steps": 3})
pair(scenario("hf-trainer-deepspeed-loss-scaled-twice-4.3",
              "transformers 4.2-4.3 under DeepSpeed with --gradient_accumulation_steps 4: "
              "training_step divided the loss by GAS and then called engine.backward, which "
              "divides by GAS again, so gradients were 1/GAS of the intended ones (4.4.0, PR "
              "#10310, stopped dividing under DeepSpeed). 4.3.x also stepped the engine once per "
              "window and the scheduler twice: see the sibling catalogue entries; this one "
              "isolates the double scaling. Fixed twin: "
              "hf-trainer-deepspeed-loss-scaled-twice-4.3-fixed.",
              ref, diagnosis("loss_scaled_twice"), loop={"loss_scaling": "twice"}, **common),
     scenario("hf-trainer-deepspeed-loss-scaled-twice-4.3-fixed",
              "transformers 4.4.0's training_step: under DeepSpeed the loss goes to "
              "engine.backward unscaled and the engine divides it by GAS once.",
              ref, PASS, **common))

ref = reference("https://github.com/huggingface/transformers/pull/10310", "transformers",
                "4.3.0-4.3.3", "4.4.0")
pair(scenario("hf-trainer-deepspeed-step-once-per-window-4.3",
              "transformers 4.3.x under DeepSpeed: PR #9622 (fixing DeepSpeed issue #671) "
              "replaced optimizer.step() by engine.step() but kept it inside the Trainer's "
              "end-of-window branch, so engine.step() ran once per window; DeepSpeed counts step() calls as micro-steps and stepped the optimizer "
              "only every GAS^2 micro-batches. 4.4.0 (PR #10310, DeepSpeed issue #776) calls "
              "engine.step() after every micro-batch. Isolated from the double loss scaling of "
              "the same releases. Fixed twin: hf-trainer-deepspeed-step-once-per-window-4.3-fixed.",
              ref, diagnosis("step_once_per_window"), loop={"stepping": "once_per_window"},
              **common),
     scenario("hf-trainer-deepspeed-step-once-per-window-4.3-fixed",
              "transformers 4.4.0: engine.step() after every engine.backward(); the engine finds "
              "the accumulation boundary itself.",
              ref, PASS, **common))

sched = copy.deepcopy(TRAINER_43)
sched.update({"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
              "scheduler": {"type": "WarmupDecayLR",
                            "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.01,
                                       "warmup_num_steps": 2, "total_num_steps": 8,
                                       "warmup_type": "linear"}}})
sched["optimizer"]["params"]["lr"] = 0.01
common = dict(model=MLP, data=MLP_DATA, deepspeed=sched, tags=["hf-trainer", "scheduler"],
              golden={"train_batch_size": 8, "steps": 6})
pair(scenario("hf-trainer-deepspeed-scheduler-stepped-twice-4.3",
              "transformers 4.3.x under DeepSpeed: the Trainer handed its linear schedule to "
              "DeepSpeed as WarmupDecayLR, whose engine.step() steps it, and still called "
              "lr_scheduler.step() itself after each optimizer step, so the schedule advanced twice "
              "per optimizer step (named as a bug in PR #10310). With GAS 1 the Trainer's extra step per micro-batch is exactly one per "
              "optimizer step. Fixed twin: hf-trainer-deepspeed-scheduler-stepped-twice-4.3-fixed.",
              ref, diagnosis("lr_scheduler_stepped_every_micro_step"),
              loop={"lr_scheduler_step": "every_micro_step"}, **common),
     scenario("hf-trainer-deepspeed-scheduler-stepped-twice-4.3-fixed",
              "transformers 4.4.0: under DeepSpeed the Trainer no longer calls "
              "lr_scheduler.step(); the engine steps WarmupDecayLR once per optimizer step.",
              ref, PASS, **common))

# ---------------------------------------------------------------------------------------------
# transformers 4.46 (October 2024): the gradient accumulation fix and its follow-ups.
AUTO_CONFIG = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
               "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
               "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
               "zero_optimization": {"stage": 2}}
TRAINER_ARGS = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 4,
                "learning_rate": 0.001, "weight_decay": 0.01}
ref = reference("https://github.com/huggingface/transformers/pull/34191", "transformers",
                "<=4.45.2", "4.46.0")
common = dict(model=GPT, data=TOKENS, deepspeed=AUTO_CONFIG, hf_trainer=TRAINER_ARGS,
              tags=["hf-trainer", "tokens"], golden={"train_batch_size": 16, "steps": 3})
pair(scenario("hf-trainer-per-micro-batch-token-mean",
              "The Trainer before 4.46.0 (PR #34191 'Fix Gradient Accumulation issue'): the "
              "model's causal-LM loss is the mean over each micro-batch's own tokens and the "
              "micro-batch losses are averaged over GAS, so with variable-length sequences a token "
              "in a short micro-batch weighs more than in the large batch (ZeRO-2 config with "
              "\"auto\" values, per-device batch 4, GAS 4). Fixed twin: "
              "hf-trainer-per-micro-batch-token-mean-fixed.",
              ref, diagnosis("per_micro_batch_token_normalisation"),
              loop={"token_normalisation": "per_micro_batch"}, **common),
     scenario("hf-trainer-per-micro-batch-token-mean-fixed",
              "transformers 4.46.0+: the summed token loss is divided by num_items_in_batch, "
              "the tokens of the whole accumulated batch.",
              ref, PASS, loop={"token_normalisation": "whole_batch"}, **common))

ref = reference("https://github.com/huggingface/transformers/issues/34263", "transformers",
                "4.46.0-4.46.1", "4.46.2")
stage0 = copy.deepcopy(AUTO_CONFIG)
stage0["zero_optimization"] = {"stage": 0}
common = dict(model=MLP, data=MLP_DATA, deepspeed=stage0, hf_trainer=TRAINER_ARGS,
              tags=["hf-trainer", "accumulation"], golden={"train_batch_size": 16, "steps": 3})
pair(scenario("hf-trainer-loss-times-gas-4.46.0",
              "transformers 4.46.0-4.46.1 (issue #34263 'New GA fix causes training loss multiple "
              "times higher'): training_step multiplied every loss by gradient_accumulation_steps "
              "before accelerator.backward, which divides by GAS (DeepSpeed's engine.backward "
              "does), so a loss not normalised by num_items_in_batch (a model without loss "
              "kwargs, a custom compute_loss) reached backward unscaled and the window's "
              "gradients were GAS times too large. Modelled on one rank at stage 0 as a "
              "loss.backward() on engine.module(x), which yields the same gradients. Fixed twin: "
              "hf-trainer-loss-times-gas-4.46.0-fixed.",
              ref, diagnosis("loss_not_scaled"),
              loop={"loss_scaling": "none", "forward": "module"}, **common),
     scenario("hf-trainer-loss-times-gas-4.46.0-fixed",
              "transformers 4.46.2 dropped the multiplication: engine.backward divides the "
              "micro-batch mean by GAS once.",
              ref, PASS, **common))

ref = reference("https://github.com/huggingface/transformers/pull/35808", "transformers",
                "4.46.2-4.48.3", "4.49.0")
common = dict(model=GPT, data=TOKENS, deepspeed=AUTO_CONFIG, hf_trainer=TRAINER_ARGS,
              tags=["hf-trainer", "tokens"], golden={"train_batch_size": 16, "steps": 3})
pair(scenario("hf-trainer-deepspeed-loss-scaled-twice-4.48",
              "transformers 4.46.2-4.48.3 under DeepSpeed (PR #35808 'Fix GA loss for "
              "Deepspeed'): the token loss is already divided by num_items_in_batch (the whole "
              "window's tokens; 4.48 divides other losses by GAS itself), and DeepSpeed's "
              "engine.backward divides by GAS again, so the gradients and grad_norm shrink with "
              "GAS. Fixed twin: hf-trainer-deepspeed-loss-scaled-twice-4.48-fixed.",
              ref, diagnosis("loss_scaled_twice"),
              loop={"token_normalisation": "whole_batch", "loss_scaling": "twice"}, **common),
     scenario("hf-trainer-deepspeed-loss-scaled-twice-4.48-fixed",
              "transformers 4.49.0 passes scale_wrt_gas=False to DeepSpeed's backward: the "
              "whole-batch-normalised loss is scaled once.",
              ref, PASS, loop={"token_normalisation": "whole_batch"}, **common))

# ---------------------------------------------------------------------------------------------
# accelerate 0.13.0-0.22.x: Accelerator's gradient_accumulation_steps (default 1) overwrote the
# value of the DeepSpeed config file ("Updating DeepSpeed's gradient accumulation steps to 1 from
# 16"); PR #1901 (issue #1830) makes accelerate fill it only where the config says "auto".
ref = reference("https://github.com/huggingface/accelerate/pull/1901", "accelerate",
                "0.13.0-0.22.0", "0.23.0")
gas_lost = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
            "optimizer": ADAMW, "zero_optimization": {"stage": 2}}
gas_kept = dict(gas_lost, gradient_accumulation_steps=4)
common = dict(model=MLP, data=MLP_DATA, tags=["accelerate", "accumulation"],
              golden={"train_batch_size": 32, "steps": 3})
pair(scenario("accelerate-deepspeed-gas-overwritten-to-1",
              "accelerate 0.13.0-0.22.0 (PR #698) overwrote the DeepSpeed config's "
              "gradient_accumulation_steps with the Accelerator's own value, 1 unless the script "
              "passed one, with only an info-level log line: the config DeepSpeed received (shown here) trains every micro batch of 8 "
              "as a step instead of batches of 32. Fixed twin: "
              "accelerate-deepspeed-gas-overwritten-to-1-fixed.",
              ref, diagnosis("no_accumulation"), deepspeed=gas_lost, **common),
     scenario("accelerate-deepspeed-gas-overwritten-to-1-fixed",
              "accelerate 0.23.0 (PR #1901) fills gradient_accumulation_steps only where it is "
              "\"auto\": the config's 4 reaches DeepSpeed.",
              ref, PASS, deepspeed=gas_kept, **common))

# ---------------------------------------------------------------------------------------------
# DeepSpeed: loss.backward() on the engine's output skipped the 1/GAS scaling and the gradient
# reduction before PR #7665 (0.18.3) hooked engine(x)'s outputs.
ref = reference("https://github.com/deepspeedai/DeepSpeed/pull/7665", "deepspeed",
                "<=0.18.2 (0.16.9 here)", "0.18.3")
direct = {"train_batch_size": 24, "train_micro_batch_size_per_gpu": 6, "optimizer": ADAMW}
common = dict(model=MLP, data=MLP_DATA, tags=["deepspeed-version", "accumulation"],
              loop={"loss_scaling": "none"}, golden={"train_batch_size": 24, "steps": 3})
pair(scenario("deepspeed-direct-backward-unscaled",
              "loss = engine(x); loss.backward(); engine.step() under DeepSpeed 0.16.9: the "
              "engine never sees the backward, so the micro-batch losses are summed without "
              "1/GAS (and never reduced across ranks): gradients are GAS (4) times the intended "
              "ones. PR #7665 'PyTorch-compatible backward API' (0.18.3) documents these silently "
              "skipped steps and hooks the outputs. Fixed twin: "
              "deepspeed-direct-backward-unscaled-fixed.",
              ref, diagnosis("loss_not_scaled"), deepspeed=direct, version="0.16.9", **common),
     scenario("deepspeed-direct-backward-unscaled-fixed",
              "The same loop under DeepSpeed 0.19.8 at ZeRO stage 2: the hooks of PR #7665 scale "
              "loss.backward() by 1/GAS and reduce the gradients (at stage 0 0.19.8 refuses the "
              "call instead).",
              ref, PASS, deepspeed=dict(direct, zero_optimization={"stage": 2}), **common))

# ---------------------------------------------------------------------------------------------
# DeepSpeed: optimizer.step() with zero gradients at initialization. PR #5104 (0.13.2) removed it
# from ZeRO 1-3 and BF16_Optimizer; FP16_Optimizer (ZeRO stage 0) still does it.
ref = reference("https://github.com/deepspeedai/DeepSpeed/pull/5104", "deepspeed",
                "ZeRO 1-3: <=0.13.1; ZeRO 0 fp16 (FP16_Optimizer): up to 0.19.8",
                "0.13.2 for ZeRO 1-3; not fixed at stage 0 (use ZeRO stage 1)")
fp16 = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8, "optimizer": ADAMW,
        "fp16": {"enabled": True}}
common = dict(model=MLP, data=MLP_DATA, dtype=None, tags=["precision"],
              golden={"train_batch_size": 32, "steps": 4})
pair(scenario("deepspeed-fp16-optimizer-step-at-init",
              "fp16 without ZeRO: FP16_Optimizer.initialize_optimizer_states calls the wrapped "
              "AdamW's step() once with zero gradients, so Adam's step count starts at 1 (the "
              "first real update uses step 2's bias correction) and weight decay shrinks the "
              "master weights once before training. PR #5104 'Remove optimizer step on "
              "initialization' removed this from ZeRO 1-3 and BF16_Optimizer only. Fixed twin: "
              "deepspeed-fp16-optimizer-step-at-init-fixed.",
              ref, diagnosis("optimizer_stepped_at_initialization"), deepspeed=fp16, **common),
     scenario("deepspeed-fp16-optimizer-step-at-init-fixed",
              "The same fp16 run at ZeRO stage 1, whose optimizer no longer steps at "
              "initialization since PR #5104 (0.13.2).",
              ref, PASS, deepspeed=dict(fp16, zero_optimization={"stage": 1}), **common))

# ---------------------------------------------------------------------------------------------
# DeepSpeed <=0.8.0: leaving zero.GatheredParameters(modifier_rank=None) did not re-partition the
# parameters, so they stayed gathered until the next forward (PR #2665, 0.8.1).
ref = reference("https://github.com/deepspeedai/DeepSpeed/pull/2665", "deepspeed",
                "<=0.8.0", "0.8.1")
zero3 = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
         "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 3},
         "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}}
common = dict(model={"name": "mlp", "options": {"dims": [16, 64, 64, 4], "activation": "gelu"},
                     "seed": 103},
              data=MLP_DATA, deepspeed=zero3, world=2, dtype="float32",
              tags=["memory", "zero"], golden={"train_batch_size": 16, "steps": 3})
pair(scenario("deepspeed-gathered-parameters-leak",
              "ZeRO stage 3 on 2 ranks with a loop that reads the full weights after every step "
              "inside deepspeed.zero.GatheredParameters(modifier_rank=None). Before DeepSpeed "
              "0.8.1 leaving the context did not re-partition them (PR #2665 '[GatheredParameters] "
              "fix memory leak'; earlier PR #1223 for the fp16 state-dict consolidation), so every "
              "rank held the whole model between steps; modelled as a loop that keeps the "
              "gathered tensors until the next step. Fixed twin: "
              "deepspeed-gathered-parameters-leak-fixed.",
              ref, diagnosis("gathered_parameters_kept"),
              loop={"keep": "gathered_parameters"}, **common),
     scenario("deepspeed-gathered-parameters-leak-fixed",
              "DeepSpeed 0.8.1+: the parameters are re-partitioned on exit; the loop keeps only "
              "what it read (their norms), so each rank holds only its partition between steps.",
              ref, PASS, loop={"keep": "gathered_parameter_norms"}, **common))

# ---------------------------------------------------------------------------------------------
# transformers: gradient checkpointing (reentrant torch.utils.checkpoint) with frozen embeddings.
ref = reference("https://github.com/huggingface/transformers/issues/21381", "transformers",
                "4.22.2 (reported; any release checkpointing with use_reentrant=True)",
                "user code: use_reentrant=False or model.enable_input_require_grads()")
gpt2 = copy.deepcopy(GPT)
gpt2["options"]["layers"] = 2
gpt2["frozen"] = ["token_embedding", "position_embedding"]
common = dict(model=gpt2, data=TOKENS, tags=["checkpointing", "frozen"],
              deepspeed={"train_batch_size": 16, "train_micro_batch_size_per_gpu": 8,
                         "optimizer": ADAMW},
              golden={"train_batch_size": 16, "steps": 3})
pair(scenario("transformers-frozen-embeddings-reentrant-checkpoint",
              "transformers issue #21381 'gradient checkpointing disables requires_grad when "
              "freezing part of models': with the embeddings frozen, every block checkpointed "
              "by the reentrant torch.utils.checkpoint gets an input that does not require grad, "
              "so no block records a backward and only ln_f and the head train (torch warns 'None "
              "of the inputs have requires_grad=True'). Fixed twin: "
              "transformers-frozen-embeddings-reentrant-checkpoint-fixed.",
              ref, diagnosis("reentrant_checkpoint_without_input_grad"),
              loop={"activation_checkpointing": "reentrant"}, **common),
     scenario("transformers-frozen-embeddings-reentrant-checkpoint-fixed",
              "The fix from the issue: use_reentrant=False (gradient_checkpointing_kwargs), "
              "whose checkpoint reaches every block's parameters.",
              ref, PASS, loop={"activation_checkpointing": "non_reentrant"}, **common))

# ---------------------------------------------------------------------------------------------
# DeepSpeed: bf16 with ZeRO accumulates gradients in bf16 (issue #2768, a duplicate of #2352);
# PR #2847 (0.10.1) added data_types.grad_accum_dtype. The default is still the model's dtype.
ref = reference("https://github.com/deepspeedai/DeepSpeed/issues/2768", "deepspeed",
                "all releases by default (no fp32 option before 0.10.1)",
                "0.10.1 (PR #2847): opt in with data_types.grad_accum_dtype fp32")
bf16 = {"train_batch_size": 512, "train_micro_batch_size_per_gpu": 1, "optimizer": ADAMW,
        "bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}
common = dict(model={"name": "mlp", "options": {"dims": [8, 64, 64, 3]}, "seed": 104},
              data={"name": "classification", "options": {"features": 8, "classes": 3},
                    "seed": 105},
              dtype=None, tags=["precision", "zero"],
              golden={"train_batch_size": 512, "steps": 2})
pair(scenario("deepspeed-bf16-zero-accumulates-in-bf16",
              "bf16 at ZeRO stage 2 with 512 micro-steps per window: the gradients accumulate in "
              "bf16 (the model's dtype, still DeepSpeed's default), and the rounding of the "
              "running sum exceeds what the bf16 precision twin shows (issue #2768 'FP32 gradient "
              "accumulation during BF16 training in ZeRO2/ZeRO3': training occasionally "
              "diverges). Fixed twin: deepspeed-bf16-zero-accumulates-in-bf16-fixed.",
              ref, diagnosis("low_precision_accumulation"), deepspeed=bf16, **common),
     scenario("deepspeed-bf16-zero-accumulates-in-bf16-fixed",
              "The same run with data_types.grad_accum_dtype fp32 (DeepSpeed 0.10.1+, PR #2847): "
              "the micro-step gradients are added into a float32 partition.",
              ref, PASS, deepspeed=dict(bf16, data_types={"grad_accum_dtype": "fp32"}), **common))

# ---------------------------------------------------------------------------------------------
# DeepSpeed fp16: _update_scale runs before unscale_and_clip_grads, so on a step where the loss
# scale grows the gradients are divided by the new scale. Issue #2686 / PR #2695 (0.8.0) fixed the
# reported norm only; the gradient side is pointed out on PR #8588 (open) and is in 0.19.8.
ref = reference("https://github.com/deepspeedai/DeepSpeed/pull/8588", "deepspeed",
                "up to 0.19.8 (every fp16 optimizer)",
                "not fixed (issue #2686 / PR #2695 in 0.8.0 fixed only the reported norm)")
fp16_sgd = {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8,
            "optimizer": {"type": "SGD", "params": {"lr": 0.05}},
            "zero_optimization": {"stage": 1}, "zero_allow_untested_optimizer": True,
            "gradient_clipping": 0.0}
common = dict(model=MLP, data=MLP_DATA, dtype=None, tags=["precision"],
              golden={"train_batch_size": 32, "steps": 4})
pair(scenario("deepspeed-fp16-scale-grown-before-unscale",
              "fp16 at ZeRO stage 1, SGD, dynamic loss scale with loss_scale_window 2: after two "
              "clean steps DeepSpeed doubles the scale in _update_scale and only then unscales, "
              "so that step's gradients (computed with scale 256) are divided by 512 and its "
              "update is half the intended one (noted on PR #8588; the reported-norm half of the "
              "same ordering was issue #2686). It cancels only when clipping binds, so clipping "
              "is off here. Fixed twin: deepspeed-fp16-scale-grown-before-unscale-fixed.",
              ref, diagnosis("unscaled_by_grown_scale"),
              deepspeed=dict(fp16_sgd, fp16={"enabled": True, "initial_scale_power": 8,
                                             "loss_scale_window": 2}), **common),
     scenario("deepspeed-fp16-scale-grown-before-unscale-fixed",
              "The workaround while DeepSpeed keeps the ordering: a static loss scale of 256 "
              "never grows, so every step unscales by the scale the gradients carry.",
              ref, PASS,
              deepspeed=dict(fp16_sgd, fp16={"enabled": True, "loss_scale": 256}), **common))

# ---------------------------------------------------------------------------------------------
# DeepSpeed WarmupCosineLR before 0.19.0: at construction get_lr() returned [0.0], one rate, and
# update_lr zipped it with the param groups, so only the first group started at 0; every other
# group took its first step at its full lr. PR #7969 "Fix WarmupCosineLR multi-group
# initialization" (first in v0.19.0). Here: the 0.16.9 rules, the Trainer-style two groups
# (biases and LayerNorm without weight decay) given as the script's param groups.
ref = reference("https://github.com/deepspeedai/DeepSpeed/pull/7969", "deepspeed",
                "<= 0.18.x (0.16.9 here)", "0.19.0 (PR #7969)")
# Clipping off in both, so that only the release differs (its default moved in 0.19.3).
cosine = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 0.0,
          "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.1}},
          "scheduler": {"type": "WarmupCosineLR",
                        "params": {"total_num_steps": 8, "warmup_num_steps": 3}}}
groups = [{"names_containing": ["bias", "ln"], "weight_decay": 0.0}, {}]
common = dict(model=GPT, data=TOKENS, deepspeed=cosine, tags=["schedulers", "parameter-groups"],
              golden={"train_batch_size": 16, "steps": 3})
bug = scenario("deepspeed-warmup-cosine-first-group-only",
               "DeepSpeed 0.16.9, WarmupCosineLR and two param groups (weight decay off for "
               "biases and LayerNorms, as the Trainer groups them): the scheduler writes its "
               "start rate 0 into the first group only, so the second group's first update runs "
               "at the full lr 0.01 instead of warming up from 0. Gradients match the golden; "
               "the parameters after step 0 do not. Fixed twin: "
               "deepspeed-warmup-cosine-first-group-only-fixed.",
               ref, diagnosis("scheduler_start_rate_first_group_only"), version="0.16.9",
               **common)
fixed = scenario("deepspeed-warmup-cosine-first-group-only-fixed",
                 "The same run under DeepSpeed 0.19.8, where the scheduler writes its start rate "
                 "into every group: every group warms up from 0, as the golden does.",
                 ref, PASS, **common)
bug["parameter_groups"] = groups
fixed["parameter_groups"] = groups
pair(bug, fixed)


# ---------------------------------------------------------------------------------------------
# DeepSpeed's own implementation bugs. The user's setup is correct, so one scenario per bug
# (its "expect" is pass, which the reference engine meets); "deepspeed_releases" says on which
# releases `run --engine deepspeed==VERSION` shows the bug and on which it passes. Releases were
# read from the sdists on PyPI (the files each fix touches, compared release by release).
# gradient_clipping is written out (0) because its default moved in 0.19.3: only the bug may
# differ between the releases.
def release_scenario(name, description, ref, *, reproduces_on, passes_on, reproduced_as,
                     tags=(), **settings):
    body = scenario(name, description, ref, PASS, tags=["deepspeed-release"] + list(tags),
                    **settings)
    body["tags"] = [t for t in body["tags"] if t != "fixed-twin"]
    body["deepspeed_releases"] = {"reproduces_on": reproduces_on, "passes_on": passes_on,
                                  "reproduced_as": reproduced_as}
    scenario_file.write_body(HERE, body)


FAILED = {"outcome": "failed"}
adamw_no_clip = {"optimizer": ADAMW, "gradient_clipping": 0.0}

# DeepSpeed 0.18.3-0.18.5, ZeRO stage 0 with bf16 and an optimizer DeepSpeed does not fuse: the
# engine wraps it in FP16_UnfusedOptimizer with a dynamic loss scale of 65536; from 0.18.3
# engine.backward scales the loss only for ZeRO optimizers (0.18.2 still called the wrapper's
# backward, which scaled it), so step() divided unscaled gradients by 65536; and
# _take_model_step zeroed bf16 gradients only under ZeRO. Issue #7837, PR #7839 (in 0.18.6:
# LossScaleConfig scales fp16 only; the zero_optimization() gate on zero_grad removed).
# Measured: 0.18.3, 0.18.4 and 0.18.5 fail alike (the gradients the update uses, p.grad / 65536,
# are 65536 times too small). 0.18.2 scales and unscales right, but its gradients are never
# zeroed either (step 1's are its own plus step 0's, diagnosed never_zeroed to 3.9e-3): the
# zero_grad half of the bug is older than the unscaling half, so 0.18.2 reproduces it too.
release_scenario(
    "deepspeed-zero0-bf16-unscaled-and-never-zeroed",
    "DeepSpeed 0.18.3 to 0.18.5 at ZeRO stage 0 with bf16 and an optimizer DeepSpeed does not fuse "
    "(torch.optim.SGD here; issue #7837, PR #7839): the optimizer was wrapped in "
    "FP16_UnfusedOptimizer, which divided every gradient by a loss scale of 65536 "
    "that backward never applied, and the engine skipped zero_grad, so gradients accumulated "
    "across optimizer steps (that half already in 0.18.2, measured). The setup is correct: the "
    "reference engine and DeepSpeed 0.18.6+ train it as the golden.",
    reference("https://github.com/deepspeedai/DeepSpeed/issues/7837", "deepspeed",
              "0.18.3-0.18.5 (0.18.2: never zeroed only, measured)", "0.18.6 (PR #7839)"),
    reproduces_on=["0.18.2", "0.18.3", "0.18.4", "0.18.5"],
    passes_on=["0.18.6", "0.18.7", "0.19.0", "0.19.8"],
    reproduced_as=FAILED,
    tags=["precision"], model=MLP, data=MLP_DATA, dtype="float32",
    deepspeed={"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
               "gradient_clipping": 0.0, "bf16": {"enabled": True},
               "optimizer": {"type": "SGD", "params": {"lr": 0.1}}},
    golden={"train_batch_size": 16, "steps": 3})

# ZeRO 1/2 with the optimizer offloaded to the CPU: PR #6550 (0.15.2) made
# async_accumulate_grad_in_cpu_via_gpu copy the gradient to the CPU buffer only at micro-step 0
# and, after it, add the buffer into the device gradient without copying the sum back, so every
# micro-step after the first was dropped from the window's gradient. PR #7967 copies back on
# every micro-step (first in 0.19.0). Measured by scripts/release-matrix (2026-12-03): the same
# numbers on 0.18.2, 0.18.5 and 0.18.6 (norm ratio 0.11); 0.19.0 and 0.19.8 pass.
release_scenario(
    "deepspeed-zero2-offload-drops-later-micro-steps",
    "DeepSpeed 0.15.2 to 0.18.9, ZeRO stage 2 with offload_optimizer on the CPU and 4 "
    "micro-batches per step (PR #7967, bug from PR #6550): the CPU accumulation buffer kept "
    "only the first micro-batch's gradient, so the gradients of later micro-steps were lost "
    "and the gradient norm was artificially small. The setup is correct: the reference engine "
    "and DeepSpeed 0.19.0+ train it as the golden.",
    reference("https://github.com/deepspeedai/DeepSpeed/pull/7967", "deepspeed",
              "0.15.2-0.18.9 (since PR #6550)", "0.19.0 (PR #7967)"),
    reproduces_on=["0.18.2", "0.18.5", "0.18.6"], passes_on=["0.19.0", "0.19.8"],
    reproduced_as=FAILED,
    tags=["zero", "offload"], model=MLP, data=MLP_DATA, dtype="float32",
    deepspeed=dict(adamw_no_clip, train_batch_size=16, train_micro_batch_size_per_gpu=4,
                   zero_optimization={"stage": 2, "offload_optimizer": {"device": "cpu"}}),
    golden={"train_batch_size": 16, "steps": 3})

# BF16_Optimizer (bf16, ZeRO stage 1, fp32 gradient accumulation): the engine ran the
# optimizer's backward_epilogue (which adds the micro-batch's bf16 gradient into the fp32
# accumulator) after allreduce_gradients, so at the boundary the last micro-batch's gradient was
# added after the all-reduce: each rank kept its own. PR #7985 runs the epilogue first (0.19.0).
# That ordering is in _backward_epilogue from 0.18.3, but run here 0.18.2-0.18.4 train it as the
# golden and 0.18.5 is the first that fails (0.18.5's engine.backward reaches the epilogue
# through queue_post_backward_callback; not confirmed as the cause).
# Measured 2026-12-03 (trainrepro bisect --good 0.19.8 --bad 0.19.0, and scripts/release-matrix):
# 0.19.0, 0.19.4, 0.19.6 and 0.19.7 still fail with the very numbers of 0.18.5 (RMS error 0.0274);
# 0.19.8 is the first that passes. The 0.19.0 reading above is not what the releases do.
release_scenario(
    "deepspeed-bf16-optimizer-zero1-boundary-not-reduced",
    "DeepSpeed 0.18.5 to 0.19.7, bf16 at ZeRO stage 1 with fp32 gradient accumulation "
    "(BF16_Optimizer) on 2 ranks (PR #7985): the boundary micro-batch's gradient was added to "
    "the fp32 accumulator after the all-reduce, so each rank stepped with its own last "
    "micro-batch instead of the ranks' average. The setup is correct: the reference engine and "
    "DeepSpeed 0.19.8 train it as the golden.",
    reference("https://github.com/deepspeedai/DeepSpeed/pull/7985", "deepspeed",
              "0.18.5-0.19.7 (run: bisected both ends; the PR says 0.18.6-0.18.10)",
              "0.19.8 (run; PR #7985)"),
    reproduces_on=["0.18.5", "0.18.6", "0.18.9", "0.19.0", "0.19.4", "0.19.6", "0.19.7"],
    passes_on=["0.18.2", "0.18.3", "0.18.4", "0.19.8"],
    reproduced_as=FAILED,
    tags=["precision", "zero"], model=MLP, data=MLP_DATA, dtype="float32", world=2,
    deepspeed=dict(adamw_no_clip, train_batch_size=16, train_micro_batch_size_per_gpu=4,
                   bf16={"enabled": True}, zero_optimization={"stage": 1},
                   data_types={"grad_accum_dtype": "fp32"}),
    golden={"train_batch_size": 16, "steps": 3})


# ZeRO 1/2 + offload_optimizer with gradient_accumulation_steps 1 and several backward() per
# optimizer step, the boundary given by set_gradient_accumulation_boundary (as accelerate 1.8.0+
# does for the Trainer when the config's GAS is 1): copy_grads_in_partition accumulated on the CPU
# only when gradient_accumulation_steps > 1 (every sdist from 0.15.1 to 0.18.9), so only the last
# backward reached the fp32 gradient. PR #7981 gates on the micro-step and the boundary (0.19.0).
# The worker runs the Trainer's loop (set_gradient_accumulation_boundary before every backward,
# engine.backward(loss / 4, scale_wrt_gas=False), engine.step() at the window's end) with the
# DeepSpeedCPUAdam accelerate swaps in for the Trainer's AdamW under offload. Measured
# 2026-12-03: 0.18.2, 0.18.6 and 0.18.9 keep only the last micro-batch (norm ratio 0.185,
# zeroed_inside_window); 0.19.0, 0.19.4 and 0.19.8 pass.
release_scenario(
    "deepspeed-zero2-offload-several-backwards-keeps-last",
    "DeepSpeed up to 0.18.9, ZeRO stage 2 with offload_optimizer on the CPU, a config whose "
    "gradient_accumulation_steps is 1 and 4 backward() per optimizer step with "
    "set_gradient_accumulation_boundary (the Hugging Face Trainer under accelerate 1.8.0+, "
    "PR #7981): every backward but the last was dropped from the step's gradient. The setup is "
    "correct: the reference engine and DeepSpeed 0.19.0+ train it as the golden.",
    reference("https://github.com/deepspeedai/DeepSpeed/pull/7981", "deepspeed",
              "<= 0.18.9 (read from the sdists from 0.15.1; run: 0.18.2, 0.18.6, 0.18.9)",
              "0.19.0 (PR #7981; run: 0.19.0, 0.19.4, 0.19.8)"),
    reproduces_on=["0.18.2", "0.18.6", "0.18.9"], passes_on=["0.19.0", "0.19.4", "0.19.8"],
    reproduced_as={"outcome": "diagnosis", "diagnosis": "zeroed_inside_window"},
    tags=["zero", "offload", "hf-trainer"], dtype="float32",
    model={"name": "mlp", "options": {"dims": [12, 24, 3], "activation": "tanh"}, "seed": 61},
    data={"name": "classification", "options": {"features": 12, "classes": 3}, "seed": 62},
    deepspeed={"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto",
               "zero_allow_untested_optimizer": True,
               "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
    hf_trainer={"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4,
                "learning_rate": 0.001, "max_grad_norm": 0.0, "accelerate_version": "1.8.0"},
    golden={"train_batch_size": 8, "steps": 3})


# ---------------------------------------------------------------------------------------------
# The folder's README: every bug with its source, written from the files above.
def write_readme():
    rows = []
    for path in sorted(HERE.glob("*.json")):
        body = json.loads(path.read_text())
        releases = body.get("deepspeed_releases")
        if body["expect"].get("outcome") == "pass" and not releases:
            continue
        ref = body["reference"]
        if releases:
            shown = releases["reproduced_as"]
            shown = f"`{shown['diagnosis']}`" if shown["outcome"] == "diagnosis" else "failed"
            shown += (f" on {', '.join(releases['reproduces_on'])}; passes on "
                      f"{', '.join(releases['passes_on'])}")
        else:
            shown = f"`{body['expect']['diagnosis']}`"
        rows.append(f"| [`{body['name']}`]({path.name}) | {ref['project']} | "
                    f"[{ref['url'].split('github.com/')[-1]}]({ref['url']}) | {ref['affected']} | "
                    f"{ref['fixed']} | {shown} |")
    (HERE / "README.md").write_text(
        "# Catalogue of real bugs\n\n"
        "Each entry reproduces a publicly reported DeepSpeed, transformers or accelerate bug about\n"
        "gradient accumulation, loss scaling, learning-rate schedules, ZeRO memory or leaks, and has\n"
        "a twin, `<name>-fixed.json`, that applies the fix and passes. Every file cites its source in\n"
        "`\"reference\"` (shown beside the verdict). Written by `generate.py`; run\n"
        "`build/trainrepro run scenarios/catalogue` to see each one reproduced and each fix pass.\n\n"
        "Bugs in DeepSpeed's own code (tag `deepspeed-release`) are one correct setup each, with no\n"
        "twin: the reference engine passes it, and `\"deepspeed_releases\"` names the releases on\n"
        "which `run --engine deepspeed==VERSION` reproduces the bug and those on which it passes\n"
        "(`docs/scenarios.md`); the last column says which. Their releases were read from the\n"
        "sdists on PyPI, release by release, in the files each fix touches.\n\n"
        "Leads that could not be catalogued, and why: `NOT-CATALOGUED.md`.\n\n"
        "| scenario | project | reported | affected | fixed | diagnosis |\n"
        "| --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n")


write_readme()
