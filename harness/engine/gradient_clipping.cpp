#include "harness/engine/gradient_clipping.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace trainrepro {

double sum_of_squares(const std::vector<at::Tensor>& gradients) {
  c10::NoGradGuard no_grad;
  // One norm per gradient computed in float64 (one operation each, not a float64 copy, a square
  // and a sum), then one read of the total: on a GPU each read is a synchronisation, and a
  // GPT has a hundred or more gradient tensors. (On the small CPU MLP the two ways cost the
  // same within the noise: engine / hand-written 0.98-0.99 with either.)
  std::vector<at::Tensor> norms;
  for (const at::Tensor& gradient : gradients) {
    if (gradient.defined()) {
      norms.push_back(at::linalg_vector_norm(gradient, 2, c10::nullopt, false, at::kDouble));
    }
  }
  if (norms.empty()) return 0.0;
  return at::stack(norms).square().sum().item<double>();
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
