// DeepSpeed's batch resolution, rule for rule (deepspeed/runtime/config.py,
// `_set_batch_related_parameters` then `_batch_assertion`): which of train_batch_size (TB),
// train_micro_batch_size_per_gpu (MB) and gradient_accumulation_steps (GAS) are given decides
// what is computed, with Python's floor division, and invalid results fail with DeepSpeed's
// own assertion texts so a user can search for them.
#pragma once
#include <cstdint>
#include <optional>
#include <variant>

#include "harness/scenario/config_error.h"

namespace trainrepro {

// As written in the config; std::nullopt where the key is absent or null (DeepSpeed reads
// both as None).
struct BatchInputs {
  std::optional<int64_t> train_batch_size;
  std::optional<int64_t> micro_batch_per_gpu;
  std::optional<int64_t> gradient_accumulation_steps;
};

struct ResolvedBatch {
  int64_t train_batch_size = 0;
  int64_t micro_batch_per_gpu = 0;
  int64_t gradient_accumulation_steps = 0;
  int64_t world_size = 0;
  BatchInputs given;  // what the config said, so a diagnosis can say "GAS was not set"
};

using BatchResolution = std::variant<ResolvedBatch, ConfigError>;

// The largest data-parallel world size accepted (scenarios and --world-size): 2^20 ranks. With
// batch keys of at most 2^40, every product of the batch arithmetic fits in 128 bits.
constexpr int64_t kLargestWorldSize = int64_t{1} << 20;

// `world_size` is the data-parallel world size (1 to kLargestWorldSize).
BatchResolution resolve_batch_config(const BatchInputs& inputs, int64_t world_size);

}  // namespace trainrepro
