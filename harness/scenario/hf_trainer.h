// The Hugging Face Trainer's side of a pasted ds_config.json. "auto" is not DeepSpeed's: the
// transformers Trainer replaces it with its TrainingArguments before DeepSpeed sees the config,
// and accelerate refuses any "auto" the Trainer did not replace. We follow transformers 5.24.0
// (integrations/deepspeed.py HfTrainerDeepSpeedConfig: trainer_config_process and
// trainer_config_finalize) and accelerate 1.15.0 (Accelerator._prepare_deepspeed), the newest
// releases when this was written; the rules are restated here, not copied. Who decides the
// accumulation boundary, per accelerate release ("accelerate_version"): hf_trainer_release.h.
//
// A scenario's "hf_trainer" section holds the run's TrainingArguments; every key has the
// Trainer's default (docs/scenarios.md lists them).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/json/json_fields.h"
#include "harness/scenario/hf_trainer_release.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

inline constexpr const char* kTransformersRelease = "5.24.0";

// TrainingArguments, with transformers 5.24.0's defaults.
struct HfTrainerArgs {
  int64_t per_device_train_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  double learning_rate = 5e-5;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double weight_decay = 0.0;
  double max_grad_norm = 1.0;
  bool fp16 = false;
  bool bf16 = false;
  // At least 1: that many warm-up steps; below 1: that fraction of max_steps (5.x has no
  // separate warmup_ratio).
  double warmup_steps = 0.0;
  // Optimizer updates of the whole run (the Trainer's num_training_steps); the scenario's
  // loop steps when not given.
  int64_t max_steps = 0;
  // The model config's hidden_size, for the bucket sizes; the zoo model's width when not given.
  int64_t hidden_size = 0;
  // The accelerate release under the Trainer ("accelerate_version", default the newest known).
  AccelerateRelease accelerate = newest_accelerate_release();
};

// Reads the "hf_trainer" section; `max_steps` and `hidden_size` default to the given values.
HfTrainerArgs read_hf_trainer(ObjectReader& section, int64_t default_max_steps,
                              int64_t default_hidden_size);

// One value the Trainer (or accelerate) writes where the config says "auto".
struct HfFilledValue {
  std::string pointer;  // in the ds_config, e.g. "/train_batch_size"
  nlohmann::json value;
  std::string source;  // "world_size × per_device_train_batch_size × gradient_accumulation_steps"
  bool depends_on_run = false;  // from the model's size or the run's length
};

struct HfFilledConfig {
  nlohmann::json config;  // what DeepSpeed receives
  std::vector<HfFilledValue> filled;
  // Non-"auto" values that disagree with TrainingArguments: the Trainer raises one ValueError
  // listing them all at train(). Each "/pointer = ds value, but hf_trainer key = hf value".
  std::vector<std::string> mismatches;
  // Pointers still "auto" after the Trainer: accelerate raises a ValueError at prepare().
  std::vector<std::string> unknown_autos;
  // What accelerate inserts: gradient_accumulation_steps 1 when the config has none, fp16 or
  // bf16 blocks for the Trainer's precision flags.
  std::vector<std::string> inserted;
  // Who decides the accumulation boundary of the run, in a sentence for the warnings.
  std::string boundary;
};

// What the Trainer and accelerate make of `config` at `world_size` ranks.
HfFilledConfig fill_as_hf_trainer(const nlohmann::json& config, const HfTrainerArgs& args,
                                  int64_t world_size);

// The Trainer's loop for these arguments: its window and whether accelerate passes the boundary.
TrainerLoopSpec trainer_loop_of(const HfTrainerArgs& args);

// Every "auto" in the config (objects only, as accelerate walks it), keys in sorted order.
std::vector<std::string> find_auto_values(const nlohmann::json& config);

// The message for a config with "auto" values and no "hf_trainer" section: every one at once,
// with what the Trainer would write under its default TrainingArguments at `world_size`.
std::string describe_auto_values(const nlohmann::json& config, int64_t world_size);

}  // namespace trainrepro
