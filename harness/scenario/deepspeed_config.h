// The user's ds_config.json, read as DeepSpeed reads it. Unlike our own sections it is read
// tolerantly: real configs carry many keys, so a key the reference engine does not implement
// becomes a warning (never a silent drop, never a rejection). The keys it does read are
// type-checked as strictly as ours.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/batch_config.h"
#include "harness/scenario/json_fields.h"

namespace trainrepro {

enum class OptimizerKind { sgd, adam, adamw };

// DeepSpeed's defaults: its fused Adam has weight_decay 0 and, for type "Adam", decoupled
// weight decay unless "adam_w_mode": false (so "Adam" with weight decay behaves as AdamW).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  std::string type_as_written;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = true;  // Adam/AdamW only
  double momentum = 0.0;               // SGD only
  double dampening = 0.0;              // SGD only
  bool nesterov = false;               // SGD only
};

struct DeepSpeedConfig {
  nlohmann::json verbatim;  // exactly as the user wrote it, for the results file
  BatchInputs batch;
  std::optional<OptimizerConfig> optimizer;  // scenarios require one; `config resolve` does not
  double gradient_clipping = 0.0;            // 0 = off, as in DeepSpeed
  int64_t zero_stage = 0;
  bool fp16_enabled = false;
  bool bf16_enabled = false;
  // "file:/deepspeed/scheduler: …" for every key the engine does not implement.
  std::vector<std::string> warnings;
};

const EnumSpellings<OptimizerKind>& optimizer_spellings();

// `pointer` locates the config in its file ("/deepspeed" in a scenario, "" for a bare
// ds_config.json). Throws ScenarioError for values of the wrong type.
DeepSpeedConfig read_deepspeed_config(const nlohmann::json& config, const std::string& file,
                                      const std::string& pointer);

}  // namespace trainrepro
