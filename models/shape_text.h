// A tensor's shape as Python prints a tuple, "(16, 2)" or "(5,)": how a user who saved the
// tensor in Python knows it, for messages about their own model and samples.
#pragma once
#include <string>

#include <ATen/core/Tensor.h>

namespace trainrepro {

inline std::string python_shape(const at::Tensor& tensor) {
  std::string text = "(";
  for (int64_t i = 0; i < tensor.dim(); ++i) {
    text += (i ? ", " : "") + std::to_string(tensor.size(i));
  }
  return text + (tensor.dim() == 1 ? ",)" : ")");
}

}  // namespace trainrepro
