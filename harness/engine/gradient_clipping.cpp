#include "harness/engine/gradient_clipping.h"

#include <cmath>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace trainrepro {
namespace {

std::vector<at::Tensor> gradients_of(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> gradients;
  gradients.reserve(parameters.size());
  for (const at::Tensor& parameter : parameters) gradients.push_back(parameter.grad());
  return gradients;
}

}  // namespace

double sum_of_squares(const std::vector<at::Tensor>& gradients) {
  c10::NoGradGuard no_grad;
  double squared = 0.0;
  for (const at::Tensor& gradient : gradients) {
    if (gradient.defined()) squared += gradient.to(at::kDouble).pow(2).sum().item<double>();
  }
  return squared;
}

void clip_to_norm(const std::vector<at::Tensor>& gradients, double total_norm, double max_norm) {
  c10::NoGradGuard no_grad;
  const double coefficient = max_norm / (total_norm + 1e-6);
  if (coefficient >= 1.0) return;
  for (const at::Tensor& gradient : gradients) {
    if (gradient.defined()) at::Tensor(gradient).mul_(coefficient);
  }
}

double global_gradient_norm(const std::vector<at::Tensor>& parameters) {
  return std::sqrt(sum_of_squares(gradients_of(parameters)));
}

double clip_gradients_by_global_norm(const std::vector<at::Tensor>& parameters, double max_norm) {
  const double total_norm = global_gradient_norm(parameters);
  clip_to_norm(gradients_of(parameters), total_norm, max_norm);
  return total_norm;
}

}  // namespace trainrepro
