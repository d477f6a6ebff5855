#include "harness/pipeline/calibration_probe.h"

#include <algorithm>
#include <exception>

#include "harness/golden/golden_key.h"
#include "harness/loop/training_loop.h"

namespace trainrepro {

int64_t calibration_probe_limit(const Plan& plan) {
  const Fp16Config& fp16 = plan.mixed.fp16;
  const int64_t hysteresis =
      plan.mixed.scaler == LossScalerKind::zero_dynamic ? std::max<int64_t>(fp16.hysteresis, 1) : 1;
  return (std::max<int64_t>(fp16.initial_scale_power, 0) + 1) * hysteresis + 1;
}

std::optional<int64_t> predict_calibration_skips(const Scenario& scenario, const Plan& plan,
                                                 int64_t limit) {
  if (plan.precision != Precision::fp16 || plan.mixed.fp16.loss_scale != 0.0) return 0;
  Plan probe = precision_twin_plan(scenario, plan);
  probe.mixed.scaler = plan.mixed.scaler;  // the run's hysteresis, not the twin's
  LoopSpec loop = golden_loop(scenario);
  loop.steps = limit;
  LoopOptions options;
  options.memory_snapshots = false;
  try {
    const Trace trace = run_training_loop(scenario.model, scenario.data, loop, probe, options);
    for (size_t s = 0; s < trace.steps.size(); ++s) {
      if (!trace.steps[s].skipped) return static_cast<int64_t>(s);
    }
  } catch (const std::exception&) {
    // A data file too short for the probe's windows, say: no prediction.
  }
  return std::nullopt;
}

}  // namespace trainrepro
