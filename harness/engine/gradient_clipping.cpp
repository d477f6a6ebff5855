#include "harness/engine/gradient_clipping.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace trainrepro {

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

}  // namespace trainrepro
