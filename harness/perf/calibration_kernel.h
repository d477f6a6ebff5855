// A fixed amount of work timed on the run's device, just before every measured repetition: the
// machine's speed at that moment. On these shared machines a neighbour's load slows the step and
// this kernel alike, so `perf compare` judges the step in units of it (PerfRepetition).
#pragma once
#include "harness/scenario/plan.h"

namespace trainrepro {

// Seconds for the kernel: matrix products and an elementwise pass, float32, on `device`
// (on CUDA synchronised before and after). Sized to take about as long as a small model's
// repetition on one CPU thread (~10-20 ms) and a few milliseconds on a GPU.
double time_calibration_kernel(Device device);

}  // namespace trainrepro
