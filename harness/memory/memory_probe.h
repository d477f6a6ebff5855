// Samples memory at the points of a training run that matter — the end of every micro-step,
// every accumulation boundary, and around evaluation — from three sources at once: live tensor
// memory (the counting CPU allocator, or CUDA's caching allocator), the host heap, and resident
// memory. Samples are plain data; the leak analysis reads them afterwards.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/scenario/plan.h"

namespace trainrepro {

enum class SamplePoint { micro_step, boundary, before_evaluation, after_evaluation };

const char* sample_point_name(SamplePoint point);

struct MemorySample {
  SamplePoint point = SamplePoint::micro_step;
  int64_t micro_step = 0;
  int64_t optimizer_step = 0;  // optimizer steps completed
  // Tensor bytes count above what was live when the probe was made (earlier scenarios, the
  // golden), and never the harness's own copies: the training's memory alone.
  int64_t cpu_tensor_bytes = 0;
  int64_t cpu_tensor_allocations = 0;
  int64_t cpu_tensor_peak_bytes = 0;
  int64_t host_heap_bytes = 0;       // -1 at micro-steps: sampled at boundaries and evaluation;
                                     // minus what the harness's own copies added
  int64_t resident_bytes = 0;        // -1 at micro-steps, likewise
  // Autograd nodes the loop's tensors keep alive (autograd_graph.h): counted at boundaries, -1
  // elsewhere and where the engine did not count them. Growing, they are a kept graph.
  int64_t autograd_nodes = -1;
  int64_t cuda_allocated_bytes = 0;  // CUDA fields stay 0 on CPU runs
  int64_t cuda_reserved_bytes = 0;
  int64_t cuda_active_bytes = 0;
  int64_t cuda_peak_allocated_bytes = 0;
  int64_t cuda_alloc_retries = 0;
  int64_t cuda_ooms = 0;
};

class MemoryProbe {
 public:
  // Installs the counting CPU allocator (if not yet) so every CPU tensor from now on is seen.
  MemoryProbe(Device device, int64_t expected_samples);

  void sample(SamplePoint point, int64_t micro_step, int64_t optimizer_step,
              int64_t autograd_nodes = -1);
  // Live tensor bytes on the run's device, and the peak since the last reset.
  int64_t device_tensor_bytes() const;
  int64_t device_peak_bytes() const;
  void reset_peak();
  // The host heap in use now, and bytes of it that are the harness's (its copies for the
  // golden comparison), left out of every later sample.
  int64_t host_heap_in_use() const;
  void exclude_from_host_heap(int64_t bytes);
  // Host heap bytes one kept CPU tensor costs beyond its data, measured now by keeping a few
  // hundred small tensors alive.
  static int64_t measure_tensor_bookkeeping_bytes();

  const std::vector<MemorySample>& samples() const { return samples_; }
  std::vector<MemorySample> take_samples() { return std::move(samples_); }

 private:
  Device device_;
  int64_t cpu_baseline_bytes_ = 0;
  int64_t cuda_baseline_bytes_ = 0;
  int64_t excluded_host_bytes_ = 0;
  std::vector<MemorySample> samples_;  // reserved up front: growing it would show as a leak
};

}  // namespace trainrepro
