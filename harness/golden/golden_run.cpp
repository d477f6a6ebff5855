#include "harness/golden/golden_run.h"

#include <ATen/ATen.h>

#include "harness/golden/golden_key.h"
#include "harness/loop/training_loop.h"
#include "models/sample_source.h"

namespace trainrepro {

Golden compute_golden(const Scenario& scenario) {
  const Plan plan = golden_plan(scenario);
  LoopOptions options;
  options.recorded_steps = scenario.golden.steps;
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
  for (OptimizerStepRecord& step : trace.steps) {
    golden.steps.push_back({step.loss, std::move(step.gradients), std::move(step.parameters)});
  }
  return golden;
}

}  // namespace trainrepro
