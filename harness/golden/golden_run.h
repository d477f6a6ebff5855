// Computes a scenario's golden by running the reference engine on the golden plan: one rank,
// float64, CPU, one batch of the intended train_batch_size per step, no accumulation.
// `trainrepro golden --update` stores it; `run` reads the stored one.
#pragma once
#include "harness/golden/golden.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

Golden compute_golden(const Scenario& scenario);

// The golden of a run that skipped windows (fp16 loss-scale calibration): the same float64
// batches, except that each optimizer step marked in `skips` is skipped as DeepSpeed skips an
// overflowed window — its data never applied, the LR scheduler and optimizer state unchanged.
// Computed when a run is judged, from the same code and inputs as the stored golden, whose
// initial weights and samples the run was first checked against.
Golden compute_golden_following_skips(const Scenario& scenario, const std::vector<bool>& skips);

}  // namespace trainrepro
