#include "harness/engine/optimizer.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace trainrepro {

void Optimizer::step(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> gradients;
  gradients.reserve(parameters.size());
  for (const at::Tensor& parameter : parameters) gradients.push_back(parameter.grad());
  step(parameters, gradients);
}

void Optimizer::step(const std::vector<at::Tensor>& parameters,
                     const std::vector<at::Tensor>& gradients) {
  c10::NoGradGuard no_grad;
  if (first_moment_.size() != parameters.size()) {
    first_moment_.assign(parameters.size(), at::Tensor());
    second_moment_.assign(parameters.size(), at::Tensor());
  }
  ++steps_taken_;
  for (size_t i = 0; i < parameters.size(); ++i) {
    at::Tensor parameter = parameters[i];
    const at::Tensor& gradient = gradients[i];
    if (!gradient.defined()) continue;
    if (config_.kind == OptimizerKind::sgd) {
      sgd_update(parameter, gradient, i);
    } else if (config_.kind == OptimizerKind::lamb) {
      lamb_update(parameter, gradient, i);
    } else {
      adam_update(parameter, gradient, i);
    }
  }
}

void Optimizer::sgd_update(at::Tensor& parameter, const at::Tensor& gradient, size_t index) {
  at::Tensor direction = gradient;
  const double weight_decay = weight_decay_of(index);
  if (weight_decay != 0.0) direction = direction.add(parameter, weight_decay);
  if (config_.momentum != 0.0) {
    at::Tensor& buffer = first_moment_[index];
    if (!buffer.defined()) {
      buffer = direction.clone();  // torch.optim.SGD: the first step takes the gradient as is
    } else {
      buffer.mul_(config_.momentum).add_(direction, 1.0 - config_.dampening);
    }
    direction = config_.nesterov ? direction.add(buffer, config_.momentum) : buffer;
  }
  parameter.add_(direction, -lr_of(index));
}

// Adam's and Lamb's running moments: exp_avg and exp_avg_sq, zero before the first step.
void Optimizer::update_moments(const at::Tensor& parameter, const at::Tensor& gradient,
                               size_t index) {
  at::Tensor& exp_avg = first_moment_[index];
  at::Tensor& exp_avg_sq = second_moment_[index];
  if (!exp_avg.defined()) {
    exp_avg = at::zeros_like(parameter);
    exp_avg_sq = at::zeros_like(parameter);
  }
  exp_avg.mul_(config_.beta1).add_(gradient, 1.0 - config_.beta1);
  exp_avg_sq.mul_(config_.beta2).addcmul_(gradient, gradient, 1.0 - config_.beta2);
}

void Optimizer::adam_update(at::Tensor& parameter, const at::Tensor& gradient, size_t index) {
  // Classic Adam folds weight decay into the gradient (L2); AdamW decays the weights directly.
  at::Tensor effective_gradient = gradient;
  const double weight_decay = weight_decay_of(index);
  if (!config_.decoupled_weight_decay && weight_decay != 0.0) {
    effective_gradient = gradient.add(parameter, weight_decay);
  }
  update_moments(parameter, effective_gradient, index);
  const at::Tensor& exp_avg = first_moment_[index];
  const at::Tensor& exp_avg_sq = second_moment_[index];

  const double t = static_cast<double>(steps_taken_);
  const double bias_correction1 = 1.0 - std::pow(config_.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(config_.beta2, t);
  const at::Tensor denominator =
      exp_avg_sq.sqrt().div_(std::sqrt(bias_correction2)).add_(config_.eps);
  const double lr = lr_of(index);
  if (config_.decoupled_weight_decay && weight_decay != 0.0) {
    parameter.mul_(1.0 - lr * weight_decay);
  }
  parameter.addcdiv_(exp_avg, denominator, -lr / bias_correction1);
}

// FusedLamb's kernel (csrc/lamb/fused_lamb_cuda_kernel.cu), per tensor: the same moments as
// Adam, weight decay inside the update, the whole tensor's trust ratio on top. Under ZeRO 1-2
// the tensor is the rank's flat partition, as DeepSpeed hands it to FusedLamb.
void Optimizer::lamb_update(at::Tensor& parameter, const at::Tensor& gradient, size_t index) {
  update_moments(parameter, gradient, index);
  const at::Tensor& exp_avg = first_moment_[index];
  const at::Tensor& exp_avg_sq = second_moment_[index];
  const at::Tensor denominator = config_.eps_inside_sqrt ? exp_avg_sq.add(config_.eps).sqrt_()
                                                         : exp_avg_sq.sqrt().add_(config_.eps);
  at::Tensor update = exp_avg.div(denominator);
  const double weight_decay = weight_decay_of(index);
  if (weight_decay != 0.0) update.add_(parameter, weight_decay);
  // The norms are read once per tensor, as the kernel's reduction does.
  const double weight_norm = parameter.norm().item<double>();
  const double update_norm = update.norm().item<double>();
  double trust_ratio = 1.0;
  if (weight_norm != 0.0 && update_norm != 0.0) {
    trust_ratio = std::clamp(weight_norm / update_norm, config_.min_coeff, config_.max_coeff);
  }
  double step_size = lr_of(index);
  if (config_.bias_correction) {
    const double t = static_cast<double>(steps_taken_);
    step_size *= std::sqrt(1.0 - std::pow(config_.beta2, t)) / (1.0 - std::pow(config_.beta1, t));
  }
  parameter.add_(update, -step_size * trust_ratio);
}

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto* buffers : {&first_moment_, &second_moment_}) {
    for (const at::Tensor& buffer : *buffers) {
      if (buffer.defined()) bytes += buffer.numel() * static_cast<int64_t>(buffer.element_size());
    }
  }
  return bytes;
}

}  // namespace trainrepro
