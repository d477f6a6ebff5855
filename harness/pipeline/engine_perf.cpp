#include "harness/pipeline/engine_perf.h"

#include <numeric>
#include <stdexcept>

#include "harness/engines/worker_training.h"
#include "harness/golden/golden_run.h"
#include "harness/golden/golden_store.h"
#include "harness/json/json_fields.h"
#include "harness/perf/engine_ratio.h"
#include "harness/perf/mann_whitney.h"
#include "models/model_size.h"

namespace trainrepro {

std::string engine_label(const WorkerVersions& versions) {
  return versions.engine == "fsdp2" ? "fsdp2 torch " + versions.torch
                                    : "deepspeed " + versions.deepspeed;
}

std::optional<std::string> why_no_engine_twin(const PlannedBenchmark& benchmark,
                                              const std::string& engine) {
  if (!benchmark.sweep_pointer.empty()) {
    return "a point of a sweep (the worker trains the scenario as written)";
  }
  if (benchmark.scenario.performance->loop != PerfLoop::harness) {
    return std::string("times the ") +
           spelling_of(benchmark.scenario.performance->loop, perf_loop_spellings()) +
           " loop, not the harness's";
  }
  return engine == "fsdp2" ? unsupported_by_fsdp2_worker(benchmark.scenario, benchmark.plan)
                           : unsupported_by_deepspeed_worker(benchmark.scenario, benchmark.plan);
}

std::vector<std::string> add_engine_twins(PerfPlan& plan, const WorkerVersions& versions) {
  std::vector<std::string> left_out;
  std::vector<PlannedBenchmark> twins;
  const std::string label = engine_label(versions);
  for (const PlannedBenchmark& benchmark : plan.benchmarks) {
    if (!benchmark.engine.empty()) continue;  // another engine's twin
    if (auto why = why_no_engine_twin(benchmark, versions.engine)) {
      left_out.push_back(benchmark.name + ": " + *why);
      continue;
    }
    PlannedBenchmark twin = benchmark;
    twin.name = engine_twin_name(benchmark.name, label);
    twin.engine = label;
    twin.twin_of = benchmark.name;
    twin.scenario.performance->target.reset();  // the scenario's targets are trainrepro's
    twins.push_back(std::move(twin));
  }
  for (PlannedBenchmark& twin : twins) plan.benchmarks.push_back(std::move(twin));
  return left_out;
}

EnginePerfLoop::EnginePerfLoop(DeepSpeedPython python, int timeout_seconds)
    : python_(std::move(python)), timeout_seconds_(timeout_seconds) {}

const Golden& EnginePerfLoop::golden_for(const PlannedBenchmark& twin) {
  const auto found = goldens_.find(twin.name);
  if (found != goldens_.end()) return found->second;
  if (!golden_folder_) golden_folder_ = std::make_unique<PrivateFolder>();
  Golden golden = compute_golden(twin.scenario);
  golden.file =
      write_golden(golden_folder_->path() + "/" + std::to_string(goldens_.size()), golden);
  return goldens_.emplace(twin.name, std::move(golden)).first->second;
}

PerfRepetition EnginePerfLoop::measure(const PlannedBenchmark& twin) {
  const Scenario& scenario = twin.scenario;
  const PerformanceSpec& spec = *scenario.performance;
  const Golden& golden = golden_for(twin);
  const bool fsdp2 = python_.versions.engine == "fsdp2";
  const std::string engine = fsdp2 ? "FSDP2" : "DeepSpeed";
  nlohmann::json job =
      fsdp2 ? fsdp2_job(scenario, twin.plan, golden) : deepspeed_job(scenario, golden);
  job["memory"] = false;  // the census would be timed with the steps
  job["time_steps"] = true;
  job["steps"] = 0;  // nothing recorded: the steps are timed, not judged
  job["loop_steps"] = spec.warmup_steps + spec.measured_steps;
  WorkerTrace worker;
  try {
    worker = run_deepspeed_worker(python_, job, timeout_seconds_, golden.parameter_names,
                                  golden.initial_parameters);
  } catch (const WorkerTraceError& error) {
    throw std::runtime_error("--engine " + python_.versions.engine + ": " + error.what());
  }
  if (worker.status != WorkerStatus::trained) {
    throw std::runtime_error("the " + engine + " worker did not train it: " + worker.reason + "\n" +
                             worker.traceback);
  }
  const auto warmup = static_cast<size_t>(spec.warmup_steps);
  const auto measured = static_cast<size_t>(spec.measured_steps);
  const Trace& trace = worker.trace;
  if (worker.step_seconds.size() < warmup + measured || trace.steps.size() < warmup + measured) {
    throw std::runtime_error("the " + engine + " worker timed " +
                             std::to_string(worker.step_seconds.size()) + " optimizer steps of " +
                             std::to_string(warmup + measured));
  }
  const std::vector<double> times(worker.step_seconds.begin() + warmup,
                                  worker.step_seconds.begin() + warmup + measured);
  const double cpu = std::accumulate(worker.step_cpu_seconds.begin() + warmup,
                                     worker.step_cpu_seconds.begin() + warmup + measured, 0.0);
  PerfRepetition repetition;
  repetition.step_seconds = median_of(times);
  repetition.cpu_step_seconds = cpu / static_cast<double>(measured);
  // As measure_repetition.cpp counts them: the measured steps' micro-batches and target tokens
  // (rank 0's), over every rank, per median step.
  const int64_t first_micro = warmup > 0 ? trace.steps[warmup - 1].micro_step : 0;
  const int64_t last_micro = trace.steps[warmup + measured - 1].micro_step;
  const double ranks = static_cast<double>(twin.plan.batch.world_size);
  const double steps = static_cast<double>(measured);
  repetition.samples_per_second =
      static_cast<double>((last_micro - first_micro) * twin.plan.batch.micro_batch_per_gpu) *
      ranks / steps / repetition.step_seconds;
  if (holds_token_data(scenario.data.options)) {
    int64_t tokens = 0;
    for (int64_t m = first_micro; m < last_micro; ++m) {
      tokens += trace.micro_steps[static_cast<size_t>(m)].items;
    }
    repetition.tokens_per_second =
        static_cast<double>(tokens) * ranks / steps / repetition.step_seconds;
  }
  return repetition;
}

}  // namespace trainrepro
