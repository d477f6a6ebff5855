#include "harness/engine/runtime_info.h"

#include <ATen/Context.h>
#include <torch/headeronly/version.h>

namespace trainrepro {

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

bool cuda_is_available() { return at::hasCUDA(); }

std::string describe_cuda() {
  if (!at::hasCUDA()) return "none";
  return std::to_string(at::getNumGPUs()) + " CUDA device(s)";
}

}  // namespace trainrepro
