#include "harness/memory/cuda_memory.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/cuda/memory_snapshot.h>

namespace trainrepro {

namespace {
using c10::CachingAllocator::StatType;
constexpr size_t kAggregate = static_cast<size_t>(StatType::AGGREGATE);
}  // namespace

CudaMemoryStats cuda_memory_stats() {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  CudaMemoryStats result;
  result.allocated_bytes = stats.allocated_bytes[kAggregate].current;
  result.reserved_bytes = stats.reserved_bytes[kAggregate].current;
  result.active_bytes = stats.active_bytes[kAggregate].current;
  result.peak_allocated_bytes = stats.allocated_bytes[kAggregate].peak;
  result.alloc_retries = stats.num_alloc_retries;
  result.ooms = stats.num_ooms;
  return result;
}

void reset_cuda_peak() {
  c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
}

int64_t cuda_device_capacity_bytes() {
  return static_cast<int64_t>(
      at::cuda::getDeviceProperties(c10::cuda::current_device())->totalGlobalMem);
}

std::string cuda_memory_snapshot_pickle() { return torch::cuda::_memory_snapshot_pickled(); }

}  // namespace trainrepro
