// How many windows DeepSpeed's dynamic fp16 loss scale will skip before its first update, so
// that `trainrepro new` runs enough steps for the comparison to cover applied updates
// (loss_scale_calibration.h says why those skips are not a failure).
#pragma once
#include <cstdint>
#include <optional>

#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// The scenario's first batches, one rank, whole batches, in fp16 with the run's loss scaler
// (initial_scale_power, hysteresis, min_loss_scale), trained by the reference engine until a
// window applies. 0 without dynamic fp16 scaling; nullopt when no window applies within
// `limit` windows (the gradients overflow at any scale) or the probe cannot run.
std::optional<int64_t> predict_calibration_skips(const Scenario& scenario, const Plan& plan,
                                                 int64_t limit);

// Enough windows for any initial_scale_power to come down to 1: its halvings, each delayed by
// the hysteresis at ZeRO stages 1-3, and one applied window.
int64_t calibration_probe_limit(const Plan& plan);

}  // namespace trainrepro
