#include "harness/perf/calibration_kernel.h"

#include <chrono>

#include <ATen/ATen.h>

#include "harness/engine/runtime_info.h"
#include "harness/memory/counting_cpu_allocator.h"
#include "harness/perf/mann_whitney.h"

namespace trainrepro {

namespace {
// The chunk's rounds of small operations: about a millisecond on one CPU thread, a step of the
// small models.
constexpr int kChunkOperations = 64;
}  // namespace

CalibrationChunk::CalibrationChunk(Device device) : cuda_(device == Device::cuda) {
  // Small tensors, like the small models' steps: the chunk pays LibTorch's per-operation
  // dispatch and the caches as a step does, not only the multiply units.
  const int64_t size = cuda_ ? 1024 : 32;
  const auto options = at::TensorOptions().dtype(at::kFloat).device(cuda_ ? at::kCUDA : at::kCPU);
  CountingCpuAllocator::HarnessScope harness_own;
  left_ = at::full({size, size}, 1.0 / static_cast<double>(size), options);
  right_ = at::ones({size, size}, options);
  product_ = at::empty({size, size}, options);
}

double CalibrationChunk::time() {
  CountingCpuAllocator::HarnessScope harness_own;
  if (cuda_) synchronize_cuda();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kChunkOperations; ++i) {
    at::mm_out(product_, left_, right_);
    product_.relu_();
    right_.mul_(0.5).add_(product_, 0.5);
  }
  if (cuda_) synchronize_cuda();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace trainrepro
