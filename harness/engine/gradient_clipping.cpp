#include "harness/engine/gradient_clipping.h"

#include <cmath>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace trainrepro {

double global_gradient_norm(const std::vector<at::Tensor>& parameters) {
  c10::NoGradGuard no_grad;
  double squared = 0.0;
  for (const at::Tensor& parameter : parameters) {
    const at::Tensor gradient = parameter.grad();
    if (gradient.defined()) squared += gradient.to(at::kDouble).pow(2).sum().item<double>();
  }
  return std::sqrt(squared);
}

double clip_gradients_by_global_norm(const std::vector<at::Tensor>& parameters, double max_norm) {
  c10::NoGradGuard no_grad;
  const double total_norm = global_gradient_norm(parameters);
  const double coefficient = max_norm / (total_norm + 1e-6);
  if (coefficient < 1.0) {
    for (const at::Tensor& parameter : parameters) {
      at::Tensor gradient = parameter.grad();
      if (gradient.defined()) gradient.mul_(coefficient);
    }
  }
  return total_norm;
}

}  // namespace trainrepro
