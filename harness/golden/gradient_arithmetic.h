// Arithmetic on a whole model's gradients (one tensor per parameter, in parameter order), as the
// diagnosis and the watch's judge form the golden and each hypothesis's prediction from sums of
// per-micro-batch gradients.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ATen.h>

namespace trainrepro {

using Gradients = std::vector<at::Tensor>;

inline Gradients scaled(const Gradients& tensors, double factor) {
  Gradients result;
  for (const at::Tensor& tensor : tensors) result.push_back(tensor * factor);
  return result;
}

inline Gradients summed(const Gradients& a, const Gradients& b) {
  Gradients result;
  for (size_t i = 0; i < a.size(); ++i) result.push_back(a[i] + b[i]);
  return result;
}

inline double squared_norm(const Gradients& tensors) {
  double squared = 0.0;
  for (const at::Tensor& tensor : tensors) squared += tensor.pow(2).sum().item<double>();
  return squared;
}

inline double norm_of(const Gradients& tensors) { return std::sqrt(squared_norm(tensors)); }

inline double dot(const Gradients& a, const Gradients& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += (a[i] * b[i]).sum().item<double>();
  return sum;
}

// ||observed - predicted|| / ||predicted||.
inline double relative_error(const Gradients& observed, const Gradients& predicted) {
  double squared = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    squared += (observed[i] - predicted[i]).pow(2).sum().item<double>();
  }
  return std::sqrt(squared) / std::max(norm_of(predicted), 1e-300);
}

}  // namespace trainrepro
