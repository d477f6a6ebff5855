#include "harness/pipeline/run_scenario.h"

#include <chrono>
#include <exception>

#include "harness/engine/runtime_info.h"
#include "harness/golden/golden_store.h"
#include "harness/loop/training_loop.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/scenario_error.h"
#include "harness/verdict/judge_config.h"
#include "harness/verdict/judge_training.h"

namespace trainrepro {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Verdict error_verdict(ErrorSource source, std::string found) {
  Verdict verdict;
  verdict.outcome = Outcome::error;
  verdict.error_source = source;
  verdict.found = std::move(found);
  return verdict;
}

bool requires_cuda(const Scenario& scenario) {
  for (Requirement requirement : scenario.requires_) {
    if (requirement == Requirement::cuda) return true;
  }
  return false;
}

// Chooses the device, or explains why this machine cannot run the scenario: a scenario that
// asks for CUDA is skipped without a GPU, but `--device cuda` on such a machine is an error,
// because nightly GPU CI must not turn green when its GPU disappears.
std::variant<Device, Verdict> choose_device(const Scenario& scenario, const RunOptions& options) {
  const DeviceChoice choice = options.device_override.value_or(scenario.device);
  if (choice == DeviceChoice::cuda && !options.cuda_available) {
    if (options.device_override) {
      return error_verdict(ErrorSource::infrastructure,
                           "--device cuda was given but LibTorch finds no usable CUDA GPU");
    }
    Verdict skipped;
    skipped.outcome = Outcome::skipped;
    skipped.found = "skipped: the scenario runs on CUDA and this machine has no usable GPU";
    return skipped;
  }
  if (requires_cuda(scenario) && !options.cuda_available) {
    Verdict skipped;
    skipped.outcome = Outcome::skipped;
    skipped.found = "skipped: the scenario requires CUDA and this machine has no usable GPU";
    return skipped;
  }
  const bool use_cuda = choice == DeviceChoice::cuda ||
                        (choice == DeviceChoice::auto_detect && options.cuda_available);
  return use_cuda ? Device::cuda : Device::cpu;
}

// What this engine cannot run yet, said plainly rather than run approximately.
std::optional<std::string> unsupported_by_engine(const Scenario& scenario, const Plan& plan) {
  if (plan.batch.world_size > 1) {
    return scenario.file + ":/world_size: " + std::to_string(plan.batch.world_size) +
           " ranks: multi-rank training is not implemented by the reference engine yet";
  }
  if (plan.precision != Precision::fp32) {
    return scenario.file + ":/deepspeed/" + precision_name(plan.precision) +
           "/enabled: mixed-precision training is not implemented by the reference engine yet";
  }
  return std::nullopt;
}

// Golden, training and judging; every failure becomes a result.
void run_training_stage(const Scenario& scenario, const Plan& plan, const RunOptions& options,
                        ScenarioResult& result) {
  if (auto reason = unsupported_by_engine(scenario, plan)) {
    result.verdict = error_verdict(ErrorSource::scenario, *reason);
    return;
  }
  auto stage_start = Clock::now();
  Golden golden;
  try {
    golden = load_golden(options.golden_dir, scenario);
  } catch (const GoldenError& error) {
    result.verdict = error_verdict(ErrorSource::scenario, error.what());
    return;
  }
  result.golden_seconds = seconds_since(stage_start);

  stage_start = Clock::now();
  Trace trace;
  try {
    if (plan.device == Device::cuda) make_cuda_deterministic();
    trace = run_training_loop(scenario.model, scenario.data, scenario.loop, plan,
                              /*recorded_steps=*/scenario.golden.steps);
  } catch (const std::exception& error) {
    result.verdict = error_verdict(ErrorSource::infrastructure,
                                   scenario.file + ": training failed: " + error.what());
    return;
  }
  result.training_seconds = seconds_since(stage_start);

  stage_start = Clock::now();
  TrainingJudgement training;
  MemoryJudgement memory;
  result.verdict = judge_run(scenario, plan, trace, golden, training, memory);
  result.training = std::move(training);
  result.memory = std::move(memory);
  result.memory_samples = std::move(trace.memory);
  result.cuda_snapshots = std::move(trace.cuda_snapshots);
  result.judging_seconds = seconds_since(stage_start);
}

}  // namespace

LoadAttempt try_load_scenario(const std::string& file) {
  const auto start = Clock::now();
  LoadAttempt attempt;
  attempt.failure.file = file;
  attempt.failure.torch_version = torch_version();
  try {
    attempt.scenario = load_scenario(file);
  } catch (const ScenarioError& error) {
    attempt.failure.verdict = error_verdict(ErrorSource::scenario, error.what());
  } catch (const std::exception& error) {
    // A bug of ours, not the user's: report it as such rather than blame the scenario.
    attempt.failure.verdict = error_verdict(
        ErrorSource::infrastructure, file + ": internal error while loading: " + error.what());
  }
  attempt.failure.seconds = seconds_since(start);
  return attempt;
}

ScenarioResult run_loaded_scenario(const Scenario& scenario, const RunOptions& options) {
  const auto start = Clock::now();
  ScenarioResult result;
  result.file = scenario.file;
  result.name = scenario.name;
  result.description = scenario.description;
  result.tags = scenario.tags;
  result.warnings = scenario.deepspeed.warnings;
  result.torch_version = torch_version();

  auto device = choose_device(scenario, options);
  if (auto* verdict = std::get_if<Verdict>(&device)) {
    result.verdict = *verdict;
    result.verdict.expected = describe_expectation(scenario.expect);
    result.seconds = seconds_since(start);
    return result;
  }

  const PlanResolution resolution = resolve_plan(scenario, std::get<Device>(device));
  if (const auto* plan = std::get_if<Plan>(&resolution)) result.plan = *plan;

  if (auto verdict = judge_config(scenario, resolution)) {
    result.verdict = *verdict;
  } else {
    run_training_stage(scenario, std::get<Plan>(resolution), options, result);
    result.verdict.expected = describe_expectation(scenario.expect);
  }
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace trainrepro
