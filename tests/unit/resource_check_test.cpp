// Sizes from options alone match the built models, and the resource check refuses what a
// machine cannot give, pointing at the key to change, while every shipped scenario fits.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/pipeline/resource_check.h"
#include "harness/scenario/load_scenario.h"
#include "models/model_size.h"
#include "models/zoo_model.h"

namespace trainrepro {
namespace {

int64_t built_parameter_count(const ModelOptions& options) {
  ModelSpec spec;
  spec.name = std::holds_alternative<MlpOptions>(options) ? "mlp" : "gpt";
  spec.options = options;
  int64_t count = 0;
  for (const at::Tensor& parameter : build_model(spec, at::kFloat, at::kCPU)->parameters()) {
    count += parameter.numel();
  }
  return count;
}

TEST(ModelSize, ParameterCountsMatchTheBuiltModels) {
  for (const ModelOptions& options :
       {ModelOptions(MlpOptions{{16, 64, 4}, Activation::relu}),
        ModelOptions(MlpOptions{{12, 24, 24, 3}, Activation::tanh}), ModelOptions(GptOptions{}),
        ModelOptions(GptOptions{97, 11, 24, 3, 3})}) {
    EXPECT_EQ(parameter_count(options), built_parameter_count(options));
  }
}

TEST(ModelSize, HugeOptionsSaturateInsteadOfWrapping) {
  const MlpOptions huge{{int64_t{1} << 40, int64_t{1} << 40, 10}, Activation::relu};
  EXPECT_EQ(parameter_count(huge), std::numeric_limits<int64_t>::max());
}

Scenario shipped(const std::string& relative) {
  return load_scenario((std::filesystem::path(TRAINREPRO_SOURCE_DIR) / "scenarios" / relative)
                           .string());
}

Plan plan_of(const Scenario& scenario) {
  return std::get<Plan>(resolve_plan(scenario, Device::cpu));
}

TEST(ResourceCheck, EveryShippedScenarioFitsTheCiMachine) {
  const MachineCapacity ci{int64_t{24} << 30, 0, 2};
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(TRAINREPRO_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".json") continue;
    const Scenario scenario = load_scenario(entry.path().string());
    // The GPU workloads of scenarios/perf/gpu are only measured, never run here.
    if (scenario.measure_only) continue;
    const PlanResolution resolution = resolve_plan(scenario, Device::cpu);
    if (const Plan* plan = std::get_if<Plan>(&resolution)) {
      EXPECT_EQ(refuse_beyond_machine(scenario, *plan, ci), std::nullopt) << entry.path();
      ++checked;
    }
  }
  EXPECT_GE(checked, 100);
}

TEST(ResourceCheck, RefusesWhatTheMachineLacksPointingAtTheKey) {
  const Scenario scenario = shipped("accumulation/gas-missing-fixed.json");
  const Plan plan = plan_of(scenario);
  const std::optional<std::string> small = refuse_beyond_machine(scenario, plan, {1 << 16, 0, 2});
  ASSERT_TRUE(small.has_value());
  EXPECT_NE(small->find("gas-missing-fixed.json:/"), std::string::npos) << *small;
  EXPECT_NE(small->find("of RAM across 1 rank"), std::string::npos) << *small;

  const Scenario ranks = shipped("zero/matrix-stage0-ws4-gas1-sgd.json");
  const std::optional<std::string> one_core =
      refuse_beyond_machine(ranks, plan_of(ranks), {int64_t{24} << 30, 0, 1});
  EXPECT_EQ(one_core, std::nullopt);  // 4 ranks on 1 core: slow, allowed
  Plan eight = plan_of(ranks);
  eight.batch.world_size = 8;
  const std::optional<std::string> too_many =
      refuse_beyond_machine(ranks, eight, {int64_t{24} << 30, 0, 1});
  ASSERT_TRUE(too_many.has_value());
  EXPECT_NE(too_many->find(":/world_size: 8 ranks would start 9 processes on 1 cores"),
            std::string::npos)
      << *too_many;
}

// A billion steps of a small model need little memory when nothing is recorded per step, but
// would train for weeks: refused by the time estimate, pointing at the steps. Swept across the
// budget: just under it runs, just over it is refused.
TEST(ResourceCheck, RefusesWhatWouldTrainBeyondTheTimeBudget) {
  Scenario scenario = shipped("accumulation/gas-missing-fixed.json");
  const Plan plan = plan_of(scenario);
  scenario.loop.steps = 1000000000;
  MachineCapacity machine{int64_t{1} << 50, 0, 2};
  const std::optional<std::string> weeks = refuse_beyond_machine(scenario, plan, machine);
  ASSERT_TRUE(weeks.has_value());
  EXPECT_NE(weeks->find("gas-missing-fixed.json:/loop/steps: this scenario would train for at "
                        "least "),
            std::string::npos)
      << *weeks;
  EXPECT_NE(weeks->find("over 1000000000 steps, at no more than 100 GFLOP/s per rank), beyond "
                        "the time budget of 60 minutes"),
            std::string::npos)
      << *weeks;

  const ResourceEstimate estimate = estimate_resources(scenario, plan);
  machine.time_budget_seconds = estimate.run_seconds * 1.01;
  EXPECT_EQ(refuse_beyond_machine(scenario, plan, machine), std::nullopt);
  machine.time_budget_seconds = estimate.run_seconds * 0.99;
  EXPECT_TRUE(refuse_beyond_machine(scenario, plan, machine).has_value());

  // The golden's own work decides for `golden --update`: few golden steps fit.
  machine.time_budget_seconds = 3600.0;
  EXPECT_EQ(refuse_beyond_machine(scenario, plan, machine, ResourceUse::golden_update),
            std::nullopt);
  scenario.golden.steps = 1000000000;
  scenario.loop.steps = 4;
  const std::optional<std::string> golden =
      refuse_beyond_machine(scenario, plan, machine, ResourceUse::golden_update);
  ASSERT_TRUE(golden.has_value());
  EXPECT_NE(golden->find(":/golden/steps: this scenario would train for at least"),
            std::string::npos)
      << *golden;
}

// The estimate's arithmetic: 6 FLOPs per parameter and sample, per micro-step of each window.
TEST(ResourceCheck, EstimatesTheTrainingArithmetic) {
  const Scenario scenario = shipped("accumulation/gas-missing-fixed.json");
  const Plan plan = plan_of(scenario);
  const ResourceEstimate estimate = estimate_resources(scenario, plan);
  const double samples = static_cast<double>(scenario.loop.steps) *
                         static_cast<double>(plan.batch.gradient_accumulation_steps) *
                         static_cast<double>(plan.batch.micro_batch_per_gpu);
  EXPECT_DOUBLE_EQ(estimate.run_flops, 6.0 * static_cast<double>(estimate.parameters) * samples);
  EXPECT_GT(estimate.run_seconds, 0.0);
}

}  // namespace
}  // namespace trainrepro
