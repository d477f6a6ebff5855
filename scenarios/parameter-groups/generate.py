#!/usr/bin/env python3
"""Writes scenarios/parameter-groups/: the param groups a training script builds itself and hands
to deepspeed.initialize(model_parameters=groups), as DeepSpeedExamples' and Megatron's
get_optimizer_grouped_parameters do (no weight decay for biases and LayerNorm), or to its client
optimizer. Each group's weight_decay overrides the optimizer's; ZeRO 1-2 flatten and partition
each group on its own, stage 3 keeps one flat buffer per group. Re-run after changing them, then
`build/trainrepro golden --update scenarios/parameter-groups`."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import scenario_file  # noqa: E402  (scenarios/scenario_file.py: one writer for every folder)

HERE = pathlib.Path(__file__).resolve().parent
MLP = {"name": "mlp", "options": {"dims": [10, 20, 20, 4], "activation": "tanh"}, "seed": 51}
MLP_DATA = {"name": "classification", "options": {"features": 10, "classes": 4}, "seed": 52}
GPT = {"name": "gpt",
       "options": {"vocab_size": 40, "max_seq_len": 24, "d_model": 24, "heads": 3, "layers": 3},
       "seed": 53}
TOKENS = {"name": "token_sequences",
          "options": {"vocab_size": 40, "min_length": 8, "max_length": 24}, "seed": 54}
# A weight decay large enough that a group given the wrong one moves visibly in 3 steps.
ADAMW = {"type": "AdamW", "params": {"lr": 0.003, "weight_decay": 0.1}}
# DeepSpeedExamples' idiom: [{params not matching, weight_decay}, {params matching, 0.0}].
NO_DECAY = [{}, {"names_containing": ["bias", "ln"], "weight_decay": 0.0}]
PASS = {"outcome": "pass"}


def write(name, description, *, groups, client=None, expect=PASS, dtype="float64", **fields):
    scenario_file.write(HERE, "parameter-groups", name, description, expect,
                        parameter_groups=groups, client_optimizer=client, dtype=dtype, **fields)


def config(train_batch_size, micro, stage, optimizer=ADAMW, **rest):
    body = {"train_batch_size": train_batch_size, "train_micro_batch_size_per_gpu": micro}
    if optimizer:
        body["optimizer"] = optimizer
    return {**body, "zero_optimization": {"stage": stage}, **rest}


write("gpt-no-decay-bias-and-norm",
      "DeepSpeedExamples' two groups on one rank, GAS 3: weights decayed at 0.1, biases and the "
      "LayerNorms (ln1, ln2, ln_f) at 0.",
      model=GPT, data=TOKENS, groups=NO_DECAY, deepspeed=config(18, 6, 0),
      golden={"train_batch_size": 18, "steps": 3})
write("gpt-no-decay-bias-and-norm-zero2-2ranks",
      "The same two groups at ZeRO stage 2 on 2 ranks, GAS 2: each group is flattened, padded "
      "and partitioned on its own, so each rank owns one shard per group.",
      model=GPT, data=TOKENS, groups=NO_DECAY, world=2, dtype="float32",
      deepspeed=config(16, 4, 2), golden={"train_batch_size": 16, "steps": 3})
write("gpt-no-decay-bias-and-norm-zero3-3ranks-gas2",
      "The two groups at ZeRO stage 3 on 3 ranks, GAS 2: each rank's shards of a group live in "
      "one flat buffer with that group's weight decay.",
      model=GPT, data=TOKENS, groups=NO_DECAY, world=3, dtype="float32",
      deepspeed=config(24, 4, 3), golden={"train_batch_size": 24, "steps": 2})
write("gpt-no-decay-bias-and-norm-bf16-zero1-2ranks",
      "The two groups in bf16 at ZeRO stage 1 on 2 ranks, judged against the precision twin.",
      model=GPT, data=TOKENS, groups=NO_DECAY, world=2, dtype="float32",
      deepspeed=config(16, 4, 1, bf16={"enabled": True}),
      golden={"train_batch_size": 16, "steps": 3})
write("gpt-layernorm-weight-matches-nothing",
      "The idiom copied from a Hugging Face model: no_decay = [\"bias\", \"LayerNorm.weight\"]. "
      "This GPT's LayerNorms are ln1, ln2 and ln_f, so \"LayerNorm.weight\" selects nothing and "
      "their weights are decayed: legal, and trained as DeepSpeed trains it, with a warning.",
      model=GPT, data=TOKENS,
      groups=[{}, {"names_containing": ["bias", "LayerNorm.weight"], "weight_decay": 0.0}],
      deepspeed=config(16, 8, 0), golden={"train_batch_size": 16, "steps": 3})
write("mlp-client-sgd-first-layer-decayed-zero1-3ranks",
      "A client torch.optim.SGD with momentum and two groups by module path (layers.0 decayed at "
      "0.05, the rest at 0) at ZeRO stage 1 on 3 ranks, GAS 2.",
      model=MLP, data=MLP_DATA, world=3,
      client={"type": "SGD", "params": {"lr": 0.05, "momentum": 0.9}},
      groups=[{"params": ["layers.0"], "weight_decay": 0.05}, {"weight_decay": 0.0}],
      deepspeed=config(24, 4, 1, optimizer=None, zero_allow_untested_optimizer=True),
      golden={"train_batch_size": 24, "steps": 3})
write("mlp-adam-l2-three-groups-gas4",
      "DeepSpeed's Adam with adam_w_mode false (L2 added to the gradient) and three groups with "
      "three weight decays, GAS 4 on one rank.",
      model=MLP, data=MLP_DATA,
      groups=[{"params": ["layers.0.weight"], "weight_decay": 0.2},
              {"params": ["layers.1.weight", "layers.2.weight"], "weight_decay": 0.02},
              {"names_containing": ["bias"], "weight_decay": 0.0}],
      deepspeed=config(16, 4, 0, optimizer={"type": "Adam", "params": {
          "lr": 0.01, "weight_decay": 0.1, "adam_w_mode": False}}),
      golden={"train_batch_size": 16, "steps": 3})
write("lamb-two-groups-zero1-2ranks",
      "Lamb with the two groups at ZeRO stage 1 on 2 ranks: FusedLamb is handed each group's "
      "flat partition as one tensor, so its trust ratio is taken per group partition, not per "
      "layer as the golden's Lamb takes it (why Lamb is an untested ZeRO optimizer).",
      expect={"outcome": "diagnosis", "diagnosis": "lamb_trust_ratio_over_partition"},
      model=GPT, data=TOKENS, groups=NO_DECAY, world=2, dtype="float32",
      deepspeed=config(16, 4, 1, optimizer={"type": "Lamb", "params": {
          "lr": 0.003, "weight_decay": 0.1}}, zero_allow_untested_optimizer=True),
      golden={"train_batch_size": 16, "steps": 3})

# Groups with their own learning rate (LLaVA's mm_projector_lr, a smaller rate for embeddings),
# and what DeepSpeed's config schedulers do with it.
HEAD_SLOWER = [{"params": ["layers.2"], "lr": 0.0003}, {}]
write("mlp-head-own-lr-zero2-2ranks-gas2",
      "LLaVA's mm_projector_lr: the last layer in a group of its own at lr 0.0003, the rest at "
      "the optimizer's 0.003, no scheduler, at ZeRO stage 2 on 2 ranks, GAS 2: each group's "
      "flat partition steps at its group's rate.",
      model=MLP, data=MLP_DATA, groups=HEAD_SLOWER, world=2,
      deepspeed=config(16, 4, 2), golden={"train_batch_size": 16, "steps": 3})
write("gpt-embeddings-own-lr-warmup-cosine-zero3-3ranks",
      "Three groups at ZeRO stage 3 on 3 ranks, GAS 2: the embeddings at lr 0.0003, biases and "
      "LayerNorms without decay, the rest; WarmupCosineLR scales each group's own lr (it keeps "
      "their ratio, unlike the warm-up schedulers).",
      model=GPT, data=TOKENS, world=3, dtype="float32",
      groups=[{"params": ["token_embedding", "position_embedding"], "lr": 0.0003},
              {"names_containing": ["bias", "ln"], "weight_decay": 0.0}, {}],
      deepspeed=config(24, 4, 3, scheduler={"type": "WarmupCosineLR", "params": {
          "total_num_steps": 6, "warmup_num_steps": 2}}),
      golden={"train_batch_size": 24, "steps": 4})
write("mlp-group-lrs-warmuplr-without-max-zero1-2ranks",
      "WarmupLR without warmup_max_lr warms each group up to its own lr (DeepSpeed 0.19.3 and "
      "later read the groups' lrs): the head at 0.0003, the rest at 0.003, ZeRO stage 1 on 2 "
      "ranks.",
      model=MLP, data=MLP_DATA, groups=HEAD_SLOWER, world=2,
      deepspeed=config(16, 4, 1, scheduler={"type": "WarmupLR", "params": {
          "warmup_num_steps": 3, "warmup_type": "linear"}}),
      golden={"train_batch_size": 16, "steps": 4})
write("mlp-group-lr-overwritten-by-warmupdecaylr",
      "The head's lr 0.0003 is lost: WarmupDecayLR writes one rate (warm-up to warmup_max_lr "
      "0.003, then decay) into every param group from its construction on, so the head trains "
      "at the rest's rate. Legal, trained as DeepSpeed trains it, with a warning that says so.",
      model=MLP, data=MLP_DATA, groups=HEAD_SLOWER,
      deepspeed=config(16, 8, 0, scheduler={"type": "WarmupDecayLR", "params": {
          "total_num_steps": 8, "warmup_max_lr": 0.003, "warmup_num_steps": 2}}),
      golden={"train_batch_size": 16, "steps": 4})
write("mlp-client-sgd-group-lr-overwritten-by-onecycle-zero1-3ranks",
      "A client SGD whose first layer's group asks for lr 0.005 under the config's OneCycle: "
      "OneCycle cycles one rate in every group, so the group's own lr never applies (warned); "
      "ZeRO stage 1 on 3 ranks, GAS 2.",
      model=MLP, data=MLP_DATA, world=3,
      client={"type": "SGD", "params": {"lr": 0.05, "momentum": 0.9}},
      groups=[{"params": ["layers.0"], "lr": 0.005}, {}],
      deepspeed=config(24, 4, 1, optimizer=None, zero_allow_untested_optimizer=True,
                       scheduler={"type": "OneCycle", "params": {
                           "cycle_min_lr": 0.01, "cycle_max_lr": 0.05,
                           "cycle_first_step_size": 2}}),
      golden={"train_batch_size": 24, "steps": 4})
