#include "harness/pipeline/resource_check.h"

#include <algorithm>
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
  const double gas = static_cast<double>(plan.batch.gradient_accumulation_steps);
  const double micro_steps = static_cast<double>(scenario.loop.steps) * gas * gas + gas;
  estimate.bookkeeping_bytes =
      micro_steps * (sizeof(MicroStepRecord) + 2.0 * sizeof(MemorySample));

  estimate.processes = plan.batch.world_size > 1 ? plan.batch.world_size + 1 : 1;
  return estimate;
}

std::optional<std::string> refuse_beyond_machine(const Scenario& scenario, const Plan& plan,
                                                 const MachineCapacity& machine) {
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
  return std::nullopt;
}

}  // namespace trainrepro
