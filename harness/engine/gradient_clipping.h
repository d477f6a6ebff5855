// Gradient clipping by global norm, as DeepSpeed does at the accumulation boundary:
// coefficient = max_norm / (total_norm + 1e-6), applied only when it is below 1.
#pragma once
#include <vector>

#include <ATen/Tensor.h>

namespace trainrepro {

// The L2 norm over all gradients together (parameters without a gradient are skipped).
double global_gradient_norm(const std::vector<at::Tensor>& parameters);

// Scales the gradients in place when their global norm exceeds `max_norm` (> 0); returns the
// norm before clipping.
double clip_gradients_by_global_norm(const std::vector<at::Tensor>& parameters, double max_norm);

}  // namespace trainrepro
