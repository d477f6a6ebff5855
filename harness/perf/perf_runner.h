// Measures a planned perf run: repetitions interleaved across benchmarks (round r measures every
// benchmark's r-th repetition, starting one benchmark later each round), each repetition right
// after its calibration kernel; then fits the sweeps' scaling exponents.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/perf/perf_plan.h"
#include "harness/perf/perf_run.h"

namespace trainrepro {

struct PerfRunnerOptions {
  double planted_slowdown = 0.0;
  // The CPU of each rank of a multi-rank benchmark, rank 0 first (cpu_pinning.h).
  std::vector<int> rank_cpus;
  // Called after each repetition: "[3/27] mlp-adamw-step: 1.92 ms/step".
  std::function<void(const std::string&)> progress;
  // Called before and after each round (every benchmark's next repetition): `perf run
  // --take-turns` waits for its turn there (turn_taking.h).
  std::function<void()> before_round;
  std::function<void()> after_round;
  // Measures one repetition of a twin trained by another engine (PlannedBenchmark::engine not
  // empty; `perf run --engine deepspeed|fsdp2`): its own steps' times, in another process.
  std::function<PerfRepetition(const PlannedBenchmark&)> measure_on_engine;
};

// Fills the benchmarks and the scaling fits; the context is the caller's. Throws
// std::runtime_error naming the benchmark when a repetition's training fails.
PerfRun measure_perf_plan(const PerfPlan& plan, const PerfRunnerOptions& options);

// The exponents of each swept scenario (step time and peak tensor bytes, and every figure
// its "expect" names), from the medians of each point's repetitions.
std::vector<ScalingFitResult> fit_scaling(const PerfPlan& plan, const PerfRun& run);

}  // namespace trainrepro
