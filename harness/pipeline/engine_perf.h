// `perf run --engine deepspeed|fsdp2`: the real DeepSpeed, PyTorch's FSDP2, or both, measured on
// the perf scenarios beside trainrepro's engine, in the same interleaved rounds. Each benchmark
// an engine's worker can train gets a twin for that engine; a repetition of a twin runs the
// worker (python/trainrepro_worker) for the warm-up and measured steps and takes the times it
// measured of its own steps.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/golden/golden.h"
#include "harness/perf/perf_plan.h"
#include "harness/perf/perf_run.h"
#include "harness/worker/deepspeed_worker.h"
#include "harness/worker/private_folder.h"

namespace trainrepro {

// The engine's name in twin names and results: "deepspeed 0.19.8", "fsdp2 torch 2.11.0".
std::string engine_label(const WorkerVersions& versions);

// Why this benchmark has no twin on the engine (versions.engine: "deepspeed" or "fsdp2"): a
// sweep point, another loop than the harness's, CUDA, what the worker cannot train yet; or
// nothing.
std::optional<std::string> why_no_engine_twin(const PlannedBenchmark& benchmark,
                                              const std::string& engine);

// Adds, after the plan's benchmarks, a twin trained by the engine `versions` names for each
// one it can train; returns "<benchmark>: <why>" for each left out.
std::vector<std::string> add_engine_twins(PerfPlan& plan, const WorkerVersions& versions);

class EnginePerfLoop {
 public:
  EnginePerfLoop(DeepSpeedPython python, int timeout_seconds);

  // One repetition of a twin: the median of its measured steps (after the warm-up), CPU time per
  // step, samples and target tokens per second over every rank; no memory figures (the worker's
  // census is left off: it would be timed). Throws std::runtime_error with the worker's reason.
  PerfRepetition measure(const PlannedBenchmark& twin);

  const WorkerVersions& versions() const { return python_.versions; }

 private:
  // The float64 golden the worker takes its initial weights and checked samples from: computed
  // once per benchmark (a perf scenario has no stored one) into a private folder.
  const Golden& golden_for(const PlannedBenchmark& twin);

  DeepSpeedPython python_;
  int timeout_seconds_;
  std::unique_ptr<PrivateFolder> golden_folder_;
  std::map<std::string, Golden> goldens_;
};

}  // namespace trainrepro
