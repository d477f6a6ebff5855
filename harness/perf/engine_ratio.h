// `perf run --engine deepspeed`: the real DeepSpeed measured beside trainrepro's engine in one
// run. Names its twin benchmarks and reads each pair's step-time ratio from the measured run.
#pragma once
#include <string>
#include <vector>

#include "harness/perf/perf_run.h"

namespace trainrepro {

// "perf-mlp-adamw-gas4 [deepspeed 0.19.8]"
std::string deepspeed_twin_name(const std::string& benchmark, const std::string& version);

// One pair: trainrepro's benchmark and its DeepSpeed twin, medians over their repetitions.
struct EngineStepRatio {
  std::string reference;  // the benchmark trainrepro's engine trained
  std::string deepspeed;  // its twin
  double ratio = 0.0;     // reference / DeepSpeed, wall time per optimizer step
  // The same in calibration units (each step time over the machine's speed beside it).
  double normalised_ratio = 0.0;
};

// Every twin (a benchmark with `twin_of`) whose pair both have repetitions, in the run's order.
std::vector<EngineStepRatio> engine_step_ratios(const PerfRun& run);

}  // namespace trainrepro
