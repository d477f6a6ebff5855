#include "harness/engine/runtime_info.h"

#include <cstdlib>
#include <ctime>

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/headeronly/version.h>

namespace trainrepro {

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

bool cuda_is_available() { return at::hasCUDA(); }

int cuda_device_count() { return at::hasCUDA() ? static_cast<int>(at::getNumGPUs()) : 0; }

std::string describe_cuda() {
  if (!at::hasCUDA()) return "none";
  return std::to_string(at::getNumGPUs()) + " CUDA device(s)";
}

std::string cuda_runtime_version() {
  try {
    // CUDART_VERSION as a number: 13000 is 13.0.
    const long version = at::detail::getCUDAHooks().versionCUDART();
    if (version <= 0) return "";
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  } catch (const std::exception&) {
    return "";  // LibTorch without its CUDA library
  }
}

void make_cuda_deterministic() {
  // cuBLAS is only deterministic with a fixed workspace; it reads this when it initialises.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
}

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void synchronize_cuda() {
  at::detail::getCUDAHooks().deviceSynchronize(at::detail::getCUDAHooks().current_device());
}

}  // namespace trainrepro
