// The configuration errors DeepSpeed raises before training starts (in DeepSpeedConfig, in
// deepspeed.initialize, or at the first backward), by name. Scenarios that reproduce a bad
// config expect one of these names ("expect": {"config_error": "…"}).
#pragma once
#include <string>

#include "harness/json/json_fields.h"

namespace trainrepro {

enum class ConfigErrorKind {
  batch_size_missing,  // neither train_batch_size nor the micro batch
  train_batch_size_not_positive,
  micro_batch_not_positive,                  // also when DeepSpeed's integer division gives 0
  gradient_accumulation_steps_not_positive,  // likewise
  batch_size_mismatch,                       // TB != MB * GAS * world size
  fp16_and_bf16_both_enabled,
  zero_stage_unsupported,       // stage outside 0-3 (DeepSpeedZeroConfig's schema)
  unknown_section_key,          // a key a pydantic-validated section does not know (a typo)
  removed_key,                  // a key of a feature the release removed (0.19.8)
  optimizer_not_supported,      // a name that is neither DeepSpeed's nor a torch.optim class
  optimizer_invalid,            // deepspeed.initialize cannot build the config's optimizer with
                                // its params (max_grad_norm, a keyword the class refuses)
  untested_zero_optimizer,      // ZeRO stage >= 1 with an optimizer DeepSpeed has not tested
  // The script's own torch optimizer with offload_optimizer on the CPU or NVMe, without
  // "zero_force_ds_cpu_optimizer": false (engine.py _configure_optimizer)
  client_optimizer_with_offload,
  direct_backward_unsupported,  // loss.backward() after an engine forward at stage 0 (0.18.3+)
  // engine.no_sync() at ZeRO stage 2-3: DeepSpeed asserts at the first entry
  no_sync_with_partitioned_gradients,
  // engine.no_sync() around the boundary's backward at ZeRO stage 1: the optimizer's reduced
  // gradients are never filled and engine.step() raises KeyError
  no_sync_boundary_at_zero_stage_1,
  // The Hugging Face Trainer under accelerate 1.8.0+ sets the boundary before every backward,
  // which DeepSpeed 0.19.4+ asserts against "managed_gradient_accumulation": false
  boundary_with_unmanaged_accumulation,
  scheduler_invalid,  // deepspeed.initialize cannot build the config's LR scheduler
  precision_invalid,  // an fp16 value DeepSpeedFP16Config's validators refuse
  // deepspeed.initialize refuses the mix of model dtype and data_types.grad_accum_dtype
  // (engine.py _do_optimizer_sanity_check), e.g. bf16 with fp32 accumulation at stage 0 (0.19)
  unsupported_precision_mix,
  // Not DeepSpeed's: a batch product beyond 2^62 samples. Python's integers hold it and
  // DeepSpeed would go on; no machine trains it, and int64 arithmetic would wrap.
  batch_too_large,
};

const EnumSpellings<ConfigErrorKind>& config_error_spellings();

// A configuration error as DeepSpeed would raise it: its name and DeepSpeed's own text.
struct ConfigError {
  ConfigErrorKind kind;
  std::string message;
};

}  // namespace trainrepro
