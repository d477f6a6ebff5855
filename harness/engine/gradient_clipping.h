// Gradient clipping by global norm, as DeepSpeed does at the accumulation boundary:
// coefficient = max_norm / (total_norm + 1e-6), applied only when it is below 1. With ZeRO the
// gradients are spread over ranks, so the pieces are separate: each rank sums the squares of its
// part, the sums are added across ranks, and each rank scales its part.
#pragma once
#include <vector>

#include <ATen/Tensor.h>

namespace trainrepro {

// Sum of squares over the gradients, in float64 (undefined ones are skipped).
double sum_of_squares(const std::vector<at::Tensor>& gradients);

// Scales the gradients in place when `total_norm` exceeds `max_norm` (> 0).
void clip_to_norm(const std::vector<at::Tensor>& gradients, double total_norm, double max_norm);

}  // namespace trainrepro
