#include "harness/engine/reference_engine.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/engine/gradient_clipping.h"

namespace trainrepro {

ReferenceEngine::ReferenceEngine(std::shared_ptr<ZooModel> model, const Plan& plan,
                                 Communicator* communicator)
    : model_(std::move(model)),
      plan_(plan),
      optimizer_(plan.optimizer),
      communicator_(communicator) {
  for (const auto& item : model_->named_parameters(/*recurse=*/true)) {
    parameter_names_.push_back(item.key());
    parameters_.push_back(item.value());
  }
}

void ReferenceEngine::backward(const at::Tensor& loss) {
  (loss / static_cast<double>(plan_.batch.gradient_accumulation_steps)).backward();
  ++backwards_;
  // DeepSpeed reduces gradients inside backward() on the boundary micro-step.
  if (is_gradient_accumulation_boundary()) average_gradients_across_ranks();
}

void ReferenceEngine::average_gradients_across_ranks() {
  if (communicator_ == nullptr || communicator_->world_size() == 1) return;
  c10::NoGradGuard no_grad;
  // One flat buffer, one collective: as DeepSpeed buckets its all-reduce.
  std::vector<at::Tensor> gradients;
  for (at::Tensor& parameter : parameters_) {
    if (!parameter.grad().defined()) parameter.mutable_grad() = at::zeros_like(parameter);
    gradients.push_back(parameter.grad().reshape({-1}));
  }
  at::Tensor flat = at::cat(gradients);
  communicator_->all_reduce_sum(flat);
  flat.div_(static_cast<double>(communicator_->world_size()));
  int64_t offset = 0;
  for (at::Tensor& parameter : parameters_) {
    const int64_t count = parameter.numel();
    parameter.mutable_grad().copy_(flat.narrow(0, offset, count).view_as(parameter));
    offset += count;
  }
}

bool ReferenceEngine::is_gradient_accumulation_boundary() const {
  return (counters_.micro_steps + 1) % plan_.batch.gradient_accumulation_steps == 0;
}

void ReferenceEngine::step() {
  if (is_gradient_accumulation_boundary()) {
    take_optimizer_step(/*through_engine=*/true);
    zero_grad();
    ++counters_.global_steps;
  }
  ++counters_.micro_steps;
}

void ReferenceEngine::optimizer_step_bypassing_engine() {
  take_optimizer_step(/*through_engine=*/false);
  ++counters_.bypass_steps;
}

void ReferenceEngine::zero_grad() {
  // Gradients are set to None, as torch's zero_grad(set_to_none=True) and DeepSpeed do.
  for (at::Tensor& parameter : parameters_) {
    if (parameter.grad().defined()) parameter.mutable_grad().reset();
  }
}

void ReferenceEngine::take_optimizer_step(bool through_engine) {
  // The observer sees the gradients as accumulated, before clipping changes them; copying costs
  // time, so only when someone is watching.
  std::vector<at::Tensor> gradients;
  if (on_optimizer_step) {
    gradients.reserve(parameters_.size());
    for (const at::Tensor& parameter : parameters_) {
      const at::Tensor gradient = parameter.grad();
      gradients.push_back(gradient.defined() ? gradient.detach().clone()
                                             : at::zeros_like(parameter));
    }
  }
  // The user's own optimizer.step() does not clip; only the engine's boundary does. The norm
  // costs a pass over every gradient, so it is computed only when clipping or observed.
  double norm = 0.0;
  if (through_engine && plan_.gradient_clipping > 0.0) {
    norm = clip_gradients_by_global_norm(parameters_, plan_.gradient_clipping);
  } else if (on_optimizer_step) {
    norm = global_gradient_norm(parameters_);
  }
  optimizer_.step(parameters_);
  if (on_optimizer_step) {
    OptimizerStepEvent event;
    event.micro_step = backwards_;
    event.gradients = &gradients;
    event.parameters = &parameters_;
    event.gradient_norm = norm;
    event.through_engine = through_engine;
    on_optimizer_step(event);
  }
}

}  // namespace trainrepro
