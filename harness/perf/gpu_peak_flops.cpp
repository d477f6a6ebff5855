#include "harness/perf/gpu_peak_flops.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>

namespace trainrepro {

std::string current_cuda_device_name() {
  return at::cuda::getDeviceProperties(c10::cuda::current_device())->name;
}

std::optional<double> gpu_peak_flops(const std::string& device_name, Precision precision) {
  // Dense tensor-core rates (no sparsity) from NVIDIA's datasheets; float32 without TF32, since
  // trainrepro turns TF32 off for reproducible CUDA runs (runtime_info.h).
  struct Rate {
    const char* name_contains;
    double half;  // bf16 and fp16
    double fp32;
  };
  static const Rate rates[] = {
      {"H200", 989.4e12, 66.9e12}, {"H100", 989.4e12, 66.9e12}, {"A100", 312e12, 19.5e12},
      {"L40S", 362.05e12, 91.6e12}, {"A10G", 70e12, 31.2e12},
  };
  for (const Rate& rate : rates) {
    if (device_name.find(rate.name_contains) != std::string::npos) {
      return precision == Precision::fp32 ? rate.fp32 : rate.half;
    }
  }
  return std::nullopt;
}

}  // namespace trainrepro
