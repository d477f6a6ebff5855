// The config change that gives the intended batch, checked with DeepSpeed's own batch rules
// before it is suggested: "set gradient_accumulation_steps 2" is no fix on 3 ranks when 32 is
// not a multiple of 3 x the micro batch. When no change of one key reaches the intended batch
// exactly, the nearest batch that resolves is offered, and why the intended one cannot.
#pragma once
#include <cstdint>
#include <string>

#include "harness/scenario/batch_config.h"

namespace trainrepro {

// "Fix: set \"gradient_accumulation_steps\": 4 or \"train_batch_size\": 32 in the DeepSpeed
// config", each candidate resolved at `batch.world_size` before it is offered.
std::string suggest_batch_fix(const ResolvedBatch& batch, int64_t intended_train_batch);

}  // namespace trainrepro
