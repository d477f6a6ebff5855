#include "harness/pipeline/resource_check.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "harness/loop/trace.h"
#include "harness/memory/leak_analysis.h"
#include "harness/memory/memory_probe.h"
#include "models/model_size.h"

namespace trainrepro {
namespace {

double element_bytes(EngineDtype dtype) { return dtype == EngineDtype::float64 ? 8.0 : 4.0; }

// Optimizer state elements per parameter: Adam's two moments, SGD's momentum buffer.
double optimizer_states_per_parameter(const OptimizerConfig& optimizer) {
  if (optimizer.kind == OptimizerKind::sgd) return optimizer.momentum > 0.0 ? 1.0 : 0.0;
  return 2.0;
}

// More golden steps than any comparison needs: only then are the steps to blame for the
// recorded copies, which otherwise grow with the model.
constexpr int64_t kManyGoldenSteps = 100;

// The part that dominates, so the refusal can point at the key to change.
std::pair<std::string, std::string> dominant_part(const ResourceEstimate& estimate,
                                                  int64_t golden_steps) {
  const std::vector<std::pair<double, std::pair<std::string, std::string>>> parts = {
      {estimate.model_state_bytes, {"/model/options", "the model"}},
      {estimate.activation_bytes,
       {"/deepspeed/train_micro_batch_size_per_gpu", "one micro-batch's activations"}},
      {estimate.recorded_bytes, {"/golden/steps", "the golden and the recorded steps"}},
      {estimate.bookkeeping_bytes, {"/loop/steps", "the per-micro-step records"}},
  };
  auto dominant = std::max_element(parts.begin(), parts.end())->second;
  if (dominant.first == "/golden/steps" && golden_steps <= kManyGoldenSteps) {
    return {"/model/options", "the model (its states, and the golden's copies of it)"};
  }
  return dominant;
}

std::string format_long_duration(double seconds) {
  char text[64];
  if (seconds < 2 * 3600.0) {
    std::snprintf(text, sizeof text, "%.0f minutes", seconds / 60.0);
  } else if (seconds < 2 * 86400.0) {
    std::snprintf(text, sizeof text, "%.1f hours", seconds / 3600.0);
  } else {
    std::snprintf(text, sizeof text, "%.3g days", seconds / 86400.0);
  }
  return text;
}

// A billion steps fit in memory when nothing is recorded per step, and would run for weeks.
std::optional<std::string> refuse_beyond_time_budget(const Scenario& scenario, const Plan& plan,
                                                     const ResourceEstimate& estimate,
                                                     const MachineCapacity& machine,
                                                     ResourceUse use) {
  const bool golden = use == ResourceUse::golden_update;
  const double seconds = golden ? estimate.golden_seconds : estimate.run_seconds;
  if (seconds <= machine.time_budget_seconds) return std::nullopt;
  const double flops = golden ? estimate.golden_flops : estimate.run_flops;
  const int64_t steps = std::max<int64_t>(1, golden ? scenario.golden.steps : scenario.loop.steps);
  const double rate =
      !golden && plan.device == Device::cuda ? kFastestCudaRankFlops : kFastestCpuRankFlops;
  // The key to change: the number of steps, unless a single step alone exceeds the budget.
  const bool one_step_too_long = seconds / static_cast<double>(steps) > machine.time_budget_seconds;
  const std::string pointer =
      golden ? (one_step_too_long ? "/golden/train_batch_size" : "/golden/steps")
             : (one_step_too_long ? "/deepspeed/train_micro_batch_size_per_gpu" : "/loop/steps");
  char figures[200];
  std::snprintf(figures, sizeof figures, "%.3g FLOPs of training arithmetic%s over %lld steps",
                flops, golden ? " for the golden" : " per rank", static_cast<long long>(steps));
  char speed[64];
  std::snprintf(speed, sizeof speed, "%.3g", rate / 1e9);
  return scenario.file + ":" + pointer + ": this scenario would train for at least " +
         format_long_duration(seconds) + " (" + figures + ", at no more than " + speed +
         " GFLOP/s per rank), beyond the time budget of " +
         format_long_duration(machine.time_budget_seconds);
}

}  // namespace

ResourceEstimate estimate_resources(const Scenario& scenario, const Plan& plan) {
  ResourceEstimate estimate;
  const double element = element_bytes(plan.dtype);
  estimate.parameters = parameter_count(scenario.model.options);
  const double parameters = static_cast<double>(estimate.parameters);
  estimate.model_state_bytes =
      parameters * element * (2.0 + optimizer_states_per_parameter(plan.optimizer));

  const double micro_batch = static_cast<double>(plan.batch.micro_batch_per_gpu);
  const double activations = static_cast<double>(
      activation_elements_per_sample(scenario.model.options, scenario.data.options));
  const double data = static_cast<double>(data_elements_per_sample(scenario.data.options));
  // Forward values and their gradients; data as float64 while it is generated.
  estimate.activation_bytes = micro_batch * (2.0 * activations * element + 8.0 * data);

  // float64 on the CPU: the golden's gradients and parameters per step, and the run's copies.
  const double golden_steps = static_cast<double>(scenario.golden.steps);
  estimate.recorded_bytes = (4.0 * golden_steps + 2.0) * parameters * 8.0;

  // The loop reserves a record per micro-step it may take (stepping once per window reaches a
  // boundary every GAS² micro-batches) and two memory samples each.
  const double gas = static_cast<double>(micro_batches_per_window(plan));
  const double micro_steps = static_cast<double>(scenario.loop.steps) * gas * gas + gas;
  estimate.bookkeeping_bytes =
      micro_steps * (sizeof(MicroStepRecord) + 2.0 * sizeof(MemorySample));

  estimate.processes = plan.batch.world_size > 1 ? plan.batch.world_size + 1 : 1;

  const double flops_per_sample =
      6.0 * parameters * static_cast<double>(tokens_per_sample(scenario.data.options));
  const double run_micro_steps = static_cast<double>(scenario.loop.steps) * gas;
  estimate.run_micro_steps = static_cast<int64_t>(std::min(run_micro_steps, 9e18));
  estimate.run_flops = run_micro_steps * micro_batch * flops_per_sample;
  estimate.golden_flops = golden_steps *
                          static_cast<double>(scenario.golden.train_batch_size) *
                          flops_per_sample;
  const double rank_flops =
      plan.device == Device::cuda ? kFastestCudaRankFlops : kFastestCpuRankFlops;
  estimate.run_seconds =
      estimate.run_flops / rank_flops + run_micro_steps * kLeastSecondsPerMicroStep;
  estimate.golden_seconds =
      estimate.golden_flops / kFastestCpuRankFlops + golden_steps * kLeastSecondsPerMicroStep;
  return estimate;
}

std::optional<std::string> refuse_beyond_machine(const Scenario& scenario, const Plan& plan,
                                                 const MachineCapacity& machine,
                                                 ResourceUse use) {
  const ResourceEstimate estimate = estimate_resources(scenario, plan);
  const std::string allow = "; make it smaller, or pass --allow-large to run it anyway";
  const int64_t ranks = plan.batch.world_size;
  if (ranks > kRanksPerCore * machine.cores) {
    return scenario.file + ":/world_size: " + std::to_string(ranks) + " ranks would start " +
           std::to_string(estimate.processes) + " processes on " +
           std::to_string(machine.cores) + " cores; at most " +
           std::to_string(kRanksPerCore * machine.cores) + " ranks (" +
           std::to_string(kRanksPerCore) + " per core) run here" + allow;
  }
  // On CUDA the model states and activations live on the GPU, one GPU per rank.
  const bool cuda = plan.device == Device::cuda;
  const double device_bytes = estimate.model_state_bytes + estimate.activation_bytes;
  const double host_bytes =
      static_cast<double>(ranks) *
      (estimate.recorded_bytes + estimate.bookkeeping_bytes + (cuda ? 0.0 : device_bytes));
  const auto [pointer, part] = dominant_part(estimate, scenario.golden.steps);
  const std::string needs =
      " (per rank: model states " + format_bytes(estimate.model_state_bytes) + " for " +
      std::to_string(estimate.parameters) + " parameters, activations " +
      format_bytes(estimate.activation_bytes) + ", golden and recorded steps " +
      format_bytes(estimate.recorded_bytes) + ", per-micro-step records " +
      format_bytes(estimate.bookkeeping_bytes) + "; mostly " + part + ")";
  // A margin for LibTorch itself, the allocator's caches and whatever else runs.
  constexpr double kUsable = 0.8;
  if (cuda && machine.gpu_bytes > 0 && device_bytes > kUsable * machine.gpu_bytes) {
    return scenario.file + ":" + pointer + ": this scenario needs about " +
           format_bytes(device_bytes) + " of GPU memory per rank" + needs + ", a GPU here has " +
           format_bytes(static_cast<double>(machine.gpu_bytes)) + allow;
  }
  if (host_bytes > kUsable * machine.ram_bytes) {
    return scenario.file + ":" + pointer + ": this scenario needs about " +
           format_bytes(host_bytes) + " of RAM across " + std::to_string(ranks) +
           (ranks == 1 ? " rank" : " ranks") + needs + ", this machine has " +
           format_bytes(static_cast<double>(machine.ram_bytes)) + allow;
  }
  if (auto too_long = refuse_beyond_time_budget(scenario, plan, estimate, machine, use)) {
    return *too_long + allow;
  }
  return std::nullopt;
}

}  // namespace trainrepro
