// CUDA memory as LibTorch's caching allocator sees it: allocated (live tensors), reserved (held
// from the driver), active, peak, allocation retries and out-of-memory events; plus the device's
// capacity and LibTorch's pickled memory snapshots (loadable in PyTorch's memory viewer).
// Always of this process's current device: a rank's own GPU (rank r uses device r % N; the NCCL
// communicator makes it current before training), device 0 for a one-rank run.
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

CudaMemoryStats cuda_memory_stats();
void reset_cuda_peak();
int64_t cuda_device_capacity_bytes();

// The caching allocator's segments and blocks, pickled. Allocation history is not recorded: its
// ring buffer (up to 100 k entries with stacks) grows the host heap with every allocation, which
// reads as a host leak on a correct run, and a C++ process has no Python stacks to give it.
std::string cuda_memory_snapshot_pickle();

}  // namespace trainrepro
