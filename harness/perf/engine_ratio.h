// `perf run --engine deepspeed|fsdp2`: other engines measured beside trainrepro's engine in one
// run. Names their twin benchmarks and reads each pair's step-time ratio from the measured run.
#pragma once
#include <string>
#include <vector>

#include "harness/perf/perf_run.h"

namespace trainrepro {

// "perf-mlp-adamw-gas4 [deepspeed 0.19.8]", "perf-mlp-adamw-gas4 [fsdp2 torch 2.11.0]"
std::string engine_twin_name(const std::string& benchmark, const std::string& engine);

// One pair, medians over their repetitions: trainrepro's benchmark and a twin another engine
// trained, or two twins of the same benchmark (the first engine's over the second's).
struct EngineStepRatio {
  std::string numerator;    // the benchmark whose step time is over the other's
  std::string denominator;
  double ratio = 0.0;       // numerator / denominator, wall time per optimizer step
  // The same in calibration units (each step time over the machine's speed beside it).
  double normalised_ratio = 0.0;
};

// Every twin (a benchmark with `twin_of`) whose pair both have repetitions: trainrepro's engine
// over the twin, in the run's order; then, where one benchmark has twins on several engines,
// each later twin over the first (fsdp2 / deepspeed when measured in that order).
std::vector<EngineStepRatio> engine_step_ratios(const PerfRun& run);

}  // namespace trainrepro
