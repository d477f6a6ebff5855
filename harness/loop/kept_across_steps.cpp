#include "harness/loop/kept_across_steps.h"

#include <ATen/ATen.h>

#include "harness/engine/reference_engine.h"

namespace trainrepro {

void KeptAcrossSteps::keep(KeepHabit habit, const at::Tensor& loss, const at::Tensor& outputs) {
  switch (habit) {
    case KeepHabit::nothing:
      break;
    case KeepHabit::loss_item:
      values.push_back(loss.item<double>());
      break;
    case KeepHabit::loss_with_graph:
      tensors.push_back(loss);
      break;
    case KeepHabit::loss_detached:
      tensors.push_back(loss.detach());
      break;
    case KeepHabit::loss_on_cpu:
      tensors.push_back(loss.detach().to(at::kCPU));
      break;
    case KeepHabit::outputs_with_graph:
      tensors.push_back(outputs);
      break;
    case KeepHabit::outputs_detached:
      tensors.push_back(outputs.detach());
      break;
    case KeepHabit::outputs_on_cpu:
      tensors.push_back(outputs.detach().to(at::kCPU));
      break;
    case KeepHabit::gathered_parameters:
    case KeepHabit::gathered_parameter_norms:
      break;  // once per optimizer step: keep_after_step
  }
}

void KeptAcrossSteps::keep_after_step(KeepHabit habit, ReferenceEngine& engine) {
  if (habit == KeepHabit::gathered_parameters) {
    gathered = engine.gather_parameters_as_the_loop_does();
  } else if (habit == KeepHabit::gathered_parameter_norms) {
    for (const at::Tensor& parameter : engine.gather_parameters_as_the_loop_does()) {
      values.push_back(parameter.norm().item<double>());
    }
  }
}

}  // namespace trainrepro
