#include "harness/golden/golden_run.h"

#include <ATen/ATen.h>

#include "harness/golden/golden_key.h"
#include "harness/loop/training_loop.h"
#include "models/sample_source.h"

namespace trainrepro {

namespace {

Golden run_golden(const Scenario& scenario, const std::vector<bool>& skips) {
  const Plan plan = golden_plan(scenario);
  LoopOptions options;
  options.recorded_steps = scenario.golden.steps;
  options.skips_to_follow = skips;
  Trace trace =
      run_training_loop(scenario.model, scenario.data, golden_loop(scenario), plan, options);

  Golden golden;
  golden.key = golden_key(scenario);
  golden.parameter_names = trace.parameter_names;
  golden.initial_parameters = trace.initial_parameters;
  golden.frozen_parameter_names = trace.frozen_parameter_names;
  golden.frozen_parameters = trace.frozen_parameters;
  golden.data = SampleSource(scenario.data)
                    .samples(0, scenario.golden.train_batch_size * scenario.golden.steps,
                             at::kDouble, at::kCPU);
  for (size_t s = 0; s < trace.steps.size(); ++s) {
    OptimizerStepRecord& step = trace.steps[s];
    golden.steps.push_back(
        {step.loss, std::move(step.gradients), std::move(step.parameters), step.skipped});
    if (step.skipped) golden.followed_skips.push_back(static_cast<int64_t>(s));
  }
  return golden;
}

}  // namespace

Golden compute_golden(const Scenario& scenario) { return run_golden(scenario, {}); }

Golden compute_golden_following_skips(const Scenario& scenario, const std::vector<bool>& skips) {
  return run_golden(scenario, skips);
}

}  // namespace trainrepro
