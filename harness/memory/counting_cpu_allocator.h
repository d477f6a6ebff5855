// A CPU allocator that counts: installed in front of LibTorch's own with c10::SetCPUAllocator,
// it knows the live bytes and allocations of every CPU tensor, the peak, and for each live
// allocation its size and the training step in which it was made (its age). That is what lets a
// leak verdict say what is alive, not only that memory grows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainrepro {

// The training's tensors only: allocations made inside a HarnessScope are counted apart.
struct CpuAllocatorStats {
  int64_t live_bytes = 0;
  int64_t live_allocations = 0;
  int64_t peak_bytes = 0;  // since install or the last reset_peak()
  int64_t harness_live_bytes = 0;
};

struct LiveAllocation {
  int64_t bytes = 0;
  int64_t birth_step = 0;
};

class CountingCpuAllocator {
 public:
  // Idempotent. Tensors allocated before installation are not counted (and never decrement).
  static void install();
  // Puts LibTorch's default allocator back; tensors made while installed still free correctly.
  static void uninstall();
  static bool installed();

  static CpuAllocatorStats stats();
  static void reset_peak();
  // The step stamped on allocations from now on (the training loop's optimizer step count).
  static void set_current_step(int64_t step);
  static std::vector<LiveAllocation> live_allocations();  // the training's, not the harness's

  // While one is alive on this thread, allocations are the harness's own (its copies of
  // gradients and parameters for the golden comparison, the golden itself): they never count
  // as the training's memory, its peak or what it leaves alive.
  class HarnessScope {
   public:
    HarnessScope();
    ~HarnessScope();
    HarnessScope(const HarnessScope&) = delete;
    HarnessScope& operator=(const HarnessScope&) = delete;

   private:
    bool outer_;
  };
};

}  // namespace trainrepro
