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
#include "harness/scenario/config_error.h"
#include "harness/scenario/deepspeed_release.h"
#include "harness/scenario/lr_schedule.h"
#include "harness/scenario/precision_config.h"
#include "harness/json/json_fields.h"

namespace trainrepro {

enum class OptimizerKind { sgd, adam, adamw, lamb };

// One param group the training script hands deepspeed.initialize (model_parameters=[{"params":
// ..., "weight_decay": ...}, ...], or its client optimizer's groups): the trainable parameters
// it holds, by name, and the weight decay that overrides the optimizer's for them.
struct ParameterGroup {
  std::vector<std::string> names;
  double weight_decay = 0.0;
  // The group's own "lr" (the optimizer's when it names none). A scheduler from the config may
  // overwrite it: WarmupLR with warmup_max_lr, WarmupDecayLR and OneCycle write one rate into
  // every group; WarmupCosineLR scales each group's own (lr_schedule.h).
  double lr = 0.0;
};

// DeepSpeed's defaults: its fused Adam has weight_decay 0 and, for type "Adam", decoupled
// weight decay unless "adam_w_mode": false (so "Adam" with weight decay behaves as AdamW).
// With "torch_adam": true DeepSpeed builds torch.optim.AdamW (or Adam when adam_w_mode is
// false) without passing weight_decay, so torch's default applies: 0.01 for AdamW.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  std::string type_as_written;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = true;  // Adam/AdamW only
  // Two parameter groups, as the Hugging Face Trainer builds its own AdamW (transformers'
  // get_decay_parameter_names): weight_decay for the weights, 0 for biases and LayerNorm
  // parameters. ZeRO 1-2 then flatten and partition each group on its own.
  bool decay_skips_bias_and_norm = false;
  // The script's own param groups ("parameter_groups" of a scenario), resolved to the trainable
  // parameters' names; empty: one group of every trainable parameter.
  std::vector<ParameterGroup> parameter_groups;
  double momentum = 0.0;               // SGD only
  double dampening = 0.0;              // SGD only
  bool nesterov = false;               // SGD only
  // Lamb only (DeepSpeed's FusedLamb, ops/lamb/fused_lamb.py and its CUDA kernel): per tensor,
  // update = m / (sqrt(v) + eps) + weight_decay * p, scaled by the trust ratio ||p|| / ||update||
  // clamped to [min_coeff, max_coeff] (1 when either norm is 0); the step size carries the bias
  // correction lr * sqrt(1 - beta2^t) / (1 - beta1^t) when bias_correction is on.
  bool bias_correction = true;
  double max_coeff = 10.0;
  double min_coeff = 0.01;
  bool eps_inside_sqrt = false;  // sqrt(v + eps) instead of sqrt(v) + eps
};

struct DeepSpeedConfig {
  nlohmann::json verbatim;                    // exactly as the user wrote it, for the results file
  // What deepspeed.initialize receives: the verbatim config, or with "hf_trainer" the config as
  // the Trainer and accelerate filled it (the real engine's worker hands DeepSpeed this one).
  nlohmann::json received;
  const DeepSpeedRelease* release = nullptr;  // whose semantics every default below follows
  BatchInputs batch;
  // What DeepSpeedConfig's constructor refuses before any batch arithmetic (a removed key, a
  // ZeRO stage its schema rejects), in DeepSpeed's order and words.
  std::optional<ConfigError> refused_while_reading;
  std::string optimizer_type;                // as written; empty without an optimizer block
  bool client_optimizer = false;  // the script's (or the Trainer's) own, not the config's
  std::optional<OptimizerConfig> optimizer;  // when the reference engine implements the type
  // Why it does not (located at /optimizer/type); empty when it does or when DeepSpeed itself
  // refuses the name (that is optimizer_refused, a config error).
  std::string optimizer_not_implemented;
  std::optional<ConfigError> optimizer_refused;  // deepspeed.initialize refuses the name
  // The "scheduler" block: built by deepspeed.initialize on the optimizer, stepped by the engine
  // at every optimizer step it takes.
  std::optional<LrSchedule> scheduler;
  std::string scheduler_not_implemented;         // a valid scheduler the engine lacks (/scheduler/type)
  std::optional<ConfigError> scheduler_refused;  // deepspeed.initialize cannot build it
  double gradient_clipping = 0.0;                // the release's default when not given; 0 = off
  int64_t zero_stage = 0;
  // "zero_optimization.stage3_param_persistence_threshold" (or its field name
  // param_persistence_threshold): at stage 3 a parameter of at most this many elements stays whole
  // on every rank between forwards, gathered once after each optimizer step
  // (parameter_offload.py mark_persistent_parameters; 1e5 by default in every release we follow).
  int64_t zero3_param_persistence_threshold = 100000;
  bool zero_allow_untested_optimizer = false;
  // Where "zero_optimization.offload_optimizer" puts the optimizer ("none", "cpu", "nvme"), and
  // "zero_force_ds_cpu_optimizer": with the optimizer offloaded, DeepSpeed takes no client
  // optimizer but its own CPU Adam unless that key is false.
  std::string offload_optimizer_device = "none";
  bool zero_force_ds_cpu_optimizer = true;
  bool managed_gradient_accumulation = true;  // false: every step() is a boundary (0.19.4+)
  bool fp16_enabled = false;
  bool bf16_enabled = false;
  Fp16Config fp16;
  bool bf16_check_grad_overflow = true;  // "bf16": {"check_grad_overflow"} (0.19)
  // "data_types": {"grad_accum_dtype"}; none: the release's default for the model's dtype.
  std::optional<Precision> grad_accum_dtype;
  // What DeepSpeed's precision validators refuse while reading ("fp16.loss_scale must be >= 0").
  std::optional<ConfigError> precision_refused;
  // A precision option the engine does not implement ("file:/deepspeed/fp16/…: why"); empty
  // when there is none.
  std::string precision_not_implemented;
  // "file:/deepspeed/scheduler: …" for every key the engine does not implement or DeepSpeed
  // ignores, saying which.
  std::vector<std::string> warnings;
};

const EnumSpellings<OptimizerKind>& optimizer_spellings();

// `pointer` locates the config in its file ("/deepspeed" in a scenario, "" for a bare
// ds_config.json); `release` decides defaults and refusals. Throws ScenarioError for values of
// the wrong type. `key_order` is the file's (json_document.h), in the file's pointers: where
// DeepSpeed's own message lists keys, it lists them in that order. May be null.
DeepSpeedConfig read_deepspeed_config(const nlohmann::json& config, const std::string& file,
                                      const std::string& pointer, const DeepSpeedRelease& release,
                                      const KeyOrder* key_order = nullptr);

}  // namespace trainrepro
