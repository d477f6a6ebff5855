// The optimizer a training script passes to deepspeed.initialize(optimizer=...), described in a
// scenario's "client_optimizer" section: {"type": "AdamW", "params": {"lr": 0.001}}. DeepSpeed
// 0.19.8 uses it and silently ignores any "optimizer" block of the config
// (runtime/engine.py _configure_optimizer); ZeRO still requires a tested type (torch's Adam and
// AdamW) unless "zero_allow_untested_optimizer" is set.
#pragma once
#include "harness/json/json_fields.h"
#include "harness/scenario/deepspeed_config.h"

namespace trainrepro {

// torch.optim's classes with torch's defaults (lr 0.001; AdamW weight_decay 0.01, Adam's 0 and
// added to the gradient; SGD momentum 0). Parameter names are torch's.
OptimizerConfig read_client_optimizer(ObjectReader& section);

// The optimizer the transformers Trainer builds and passes when the config has none: torch
// AdamW with TrainingArguments' learning_rate, betas, epsilon and weight_decay.
OptimizerConfig hf_trainer_client_optimizer(double lr, double beta1, double beta2, double eps,
                                            double weight_decay);

}  // namespace trainrepro
