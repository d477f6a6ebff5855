#include "harness/memory/cuda_memory.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/cuda/memory_snapshot.h>

namespace trainrepro {

namespace {
using c10::CachingAllocator::StatType;
constexpr size_t kAggregate = static_cast<size_t>(StatType::AGGREGATE);
}  // namespace

CudaMemoryStats cuda_memory_stats(int device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  CudaMemoryStats result;
  result.allocated_bytes = stats.allocated_bytes[kAggregate].current;
  result.reserved_bytes = stats.reserved_bytes[kAggregate].current;
  result.active_bytes = stats.active_bytes[kAggregate].current;
  result.peak_allocated_bytes = stats.allocated_bytes[kAggregate].peak;
  result.alloc_retries = stats.num_alloc_retries;
  result.ooms = stats.num_ooms;
  return result;
}

void reset_cuda_peak(int device) { c10::cuda::CUDACachingAllocator::resetPeakStats(device); }

int64_t cuda_device_capacity_bytes(int device) {
  return static_cast<int64_t>(at::cuda::getDeviceProperties(device)->totalGlobalMem);
}

void start_cuda_memory_history() {
  torch::cuda::_record_memory_history(/*enabled=*/"all", /*context=*/"all", /*stacks=*/"python",
                                      /*max_entries=*/100000);
}

std::string cuda_memory_snapshot_pickle() { return torch::cuda::_memory_snapshot_pickled(); }

}  // namespace trainrepro
