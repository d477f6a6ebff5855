// CUDA memory as LibTorch's caching allocator sees it: allocated (live tensors), reserved (held
// from the driver), active, peak, allocation retries and out-of-memory events; plus the device's
// capacity and LibTorch's pickled memory snapshots (loadable in PyTorch's memory viewer).
#pragma once
#include <cstdint>
#include <string>

namespace trainrepro {

struct CudaMemoryStats {
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t active_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t alloc_retries = 0;
  int64_t ooms = 0;
};

CudaMemoryStats cuda_memory_stats(int device);
void reset_cuda_peak(int device);
int64_t cuda_device_capacity_bytes(int device);

// Start recording allocation history (stack traces), so snapshots show where memory came from.
void start_cuda_memory_history();
std::string cuda_memory_snapshot_pickle();

}  // namespace trainrepro
