// The statistics of a leak verdict: a robust slope (Theil–Sen: the median of all pairwise
// slopes, so one noisy sample never decides) and whether growth shows in every window of k
// boundaries (so a step change from a cache warming up is not a leak); and a description of the
// tensor allocations that survive from step to step, grouped by size and birth step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/memory/counting_cpu_allocator.h"

namespace trainrepro {

// Slope of y over x = 0, 1, 2, … (bytes per step). 0 for fewer than two points.
double theil_sen_slope(const std::vector<double>& y);

struct GrowthTrend {
  double bytes_per_step = 0.0;
  int64_t windows = 0;
  bool grows_in_every_window = false;
  double first = 0.0;
  double last = 0.0;
};

// Windows are consecutive, non-overlapping runs of `window` points counted from the end (the
// oldest points left over are ignored); a window grows when its last point exceeds its first.
GrowthTrend growth_trend(const std::vector<double>& y, int64_t window);

// The allocations alive at the end, counted by the step that made them, over birth steps
// [first_step, last_step): the measure of a leak whatever its size.
struct SurvivorCount {
  std::vector<int64_t> allocations_by_step;  // index i: birth step first_step + i
  double allocations_per_step = 0.0;
  double bytes_per_step = 0.0;
  int64_t windows = 0;  // consecutive windows of `window` birth steps, counted from the end
  bool in_every_window = false;  // every window has a step that left something alive
};
SurvivorCount count_survivors_by_step(const std::vector<LiveAllocation>& live, int64_t first_step,
                                      int64_t last_step, int64_t window);

// "each step leaves 3 allocations alive (2 × 1 KiB, 1 × 4 B), born in steps 5…38", from the
// allocations alive at the end that were born in [first_step, last_step).
std::string describe_surviving_allocations(const std::vector<LiveAllocation>& live,
                                           int64_t first_step, int64_t last_step);

// "7.1 KiB", "24 GiB", "512 B".
std::string format_bytes(double bytes);

}  // namespace trainrepro
