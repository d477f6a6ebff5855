#include "harness/memory/memory_probe.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "harness/memory/counting_cpu_allocator.h"
#include "harness/memory/cuda_memory.h"
#include "harness/memory/host_memory.h"

namespace trainrepro {

const char* sample_point_name(SamplePoint point) {
  switch (point) {
    case SamplePoint::micro_step:
      return "micro_step";
    case SamplePoint::boundary:
      return "boundary";
    case SamplePoint::before_evaluation:
      return "before_evaluation";
    case SamplePoint::after_evaluation:
      return "after_evaluation";
  }
  return "?";
}

MemoryProbe::MemoryProbe(Device device, int64_t expected_samples) : device_(device) {
  CountingCpuAllocator::install();
  samples_.reserve(static_cast<size_t>(expected_samples));
  // The training's memory only: what earlier scenarios or the harness left alive is the
  // baseline, and the peak starts here, not at the process's largest scenario so far.
  reset_peak();
  cpu_baseline_bytes_ = CountingCpuAllocator::stats().live_bytes;
  if (device_ == Device::cuda) cuda_baseline_bytes_ = cuda_memory_stats().allocated_bytes;
}

int64_t MemoryProbe::host_heap_in_use() const { return host_heap_in_use_bytes(); }

void MemoryProbe::exclude_from_host_heap(int64_t bytes) { excluded_host_bytes_ += bytes; }

int64_t MemoryProbe::measure_tensor_bookkeeping_bytes() {
  constexpr int64_t kTensors = 256;
  std::vector<at::Tensor> kept;
  kept.reserve(kTensors);
  const int64_t heap_before = host_heap_in_use_bytes();
  const int64_t tensors_before = CountingCpuAllocator::stats().live_bytes;
  for (int64_t i = 0; i < kTensors; ++i) kept.push_back(at::zeros({1}, at::kDouble));
  const int64_t heap = host_heap_in_use_bytes() - heap_before;
  const int64_t data = CountingCpuAllocator::stats().live_bytes - tensors_before;
  return std::max<int64_t>(0, (heap - data) / kTensors);
}

void MemoryProbe::sample(SamplePoint point, int64_t micro_step, int64_t optimizer_step,
                         int64_t autograd_nodes) {
  MemorySample sample;
  sample.autograd_nodes = autograd_nodes;
  sample.point = point;
  sample.micro_step = micro_step;
  sample.optimizer_step = optimizer_step;
  const CpuAllocatorStats cpu = CountingCpuAllocator::stats();
  sample.cpu_tensor_bytes = cpu.live_bytes - cpu_baseline_bytes_;
  sample.cpu_tensor_allocations = cpu.live_allocations;
  sample.cpu_tensor_peak_bytes = cpu.peak_bytes - cpu_baseline_bytes_;
  // The host signals cost microseconds each (mallinfo2 walks every malloc arena, resident
  // memory is a read of /proc): at every micro-step they would take more than the 2 % of step
  // time probing may cost. The leak verdict reads boundaries, where they are sampled.
  const bool host_signals = point != SamplePoint::micro_step;
  sample.host_heap_bytes = host_signals ? host_heap_in_use_bytes() - excluded_host_bytes_ : -1;
  sample.resident_bytes = host_signals ? resident_set_bytes() : -1;
  if (device_ == Device::cuda) {
    const CudaMemoryStats cuda = cuda_memory_stats();
    sample.cuda_allocated_bytes = cuda.allocated_bytes - cuda_baseline_bytes_;
    sample.cuda_reserved_bytes = cuda.reserved_bytes;
    sample.cuda_active_bytes = cuda.active_bytes;
    sample.cuda_peak_allocated_bytes = cuda.peak_allocated_bytes - cuda_baseline_bytes_;
    sample.cuda_alloc_retries = cuda.alloc_retries;
    sample.cuda_ooms = cuda.ooms;
  }
  // Beyond the reservation the vector would reallocate and distort the heap signal; the loop
  // reserves enough, and a longer run simply stops sampling rather than lie.
  if (samples_.size() < samples_.capacity()) samples_.push_back(sample);
}

int64_t MemoryProbe::device_tensor_bytes() const {
  return device_ == Device::cuda ? cuda_memory_stats().allocated_bytes
                                 : CountingCpuAllocator::stats().live_bytes;
}

int64_t MemoryProbe::device_peak_bytes() const {
  return device_ == Device::cuda ? cuda_memory_stats().peak_allocated_bytes
                                 : CountingCpuAllocator::stats().peak_bytes;
}

void MemoryProbe::reset_peak() {
  if (device_ == Device::cuda) {
    reset_cuda_peak();
  } else {
    CountingCpuAllocator::reset_peak();
  }
}

}  // namespace trainrepro
