// Turns scenario files into the benchmarks `perf run` measures: loads each (strictly), keeps
// those with a "performance" section, expands a sweep into one benchmark per value, chooses the
// device and resolves the DeepSpeed config into the engine's plan.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// A scenario that cannot be measured: a load error, a refused config, ranks without mpirun.
// The message starts with the file (and pointer). `perf run` exits 2 on it.
class PerfInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PlannedBenchmark {
  std::string name;  // the benchmark's name (the scenario's, or "<name>/<key>:<value>")
  Scenario scenario;
  Plan plan;
  std::string sweep_pointer;  // empty unless a point of a sweep
  double sweep_value = 0.0;
  // The scenario file's JSON with the swept value in place: what the rank processes load.
  nlohmann::json document;
  // Empty: measured by trainrepro. "deepspeed 0.19.8", "fsdp2 torch 2.11.0": the same scenario
  // trained by that engine (`perf run --engine …`), the twin of the benchmark named `twin_of`.
  std::string engine;
  std::string twin_of;

  bool runs_on_ranks() const;
};

// Several ranks are measured in rank processes of their own (measure_on_ranks.h); so is every
// point of a world-size sweep, one rank included, so that its points are measured alike.
bool runs_on_ranks(int64_t world_size, const std::string& sweep_pointer);

struct PerfPlan {
  std::vector<PlannedBenchmark> benchmarks;
  std::vector<std::string> skipped;  // "FILE: why" (CUDA scenarios on a machine without a GPU)
  int64_t without_performance_section = 0;
};

struct PerfPlanOptions {
  std::optional<DeviceChoice> device_override;
  bool cuda_available = false;
  int64_t cuda_devices = 0;  // one GPU per rank
  bool mpirun_available = true;
  std::optional<int64_t> repetitions;  // replaces every scenario's (confirmation reruns)
};

// Throws PerfInputError for the first file that cannot be measured.
PerfPlan plan_perf_run(const std::vector<std::string>& files, const PerfPlanOptions& options);

}  // namespace trainrepro
