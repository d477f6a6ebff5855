// The run pipeline's decisions that do not need training: device choice, skipping, and judging
// configs that DeepSpeed would refuse.
#include <gtest/gtest.h>

#include "harness/pipeline/run_scenario.h"
#include "harness/scenario/load_scenario.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class RunScenario : public ScenarioFileTest {
 protected:
  Scenario load(const nlohmann::json& scenario) {
    return load_scenario(write("scenario.json", scenario.dump()));
  }
};

TEST_F(RunScenario, CudaScenarioIsSkippedWithoutGpu) {
  nlohmann::json scenario = valid_scenario();
  scenario["device"] = "cuda";
  const ScenarioResult result = run_loaded_scenario(load(scenario), {std::nullopt, false});
  EXPECT_EQ(result.verdict.outcome, Outcome::skipped);
  EXPECT_EQ(exit_code_of(result.verdict), kExitOk);
}

TEST_F(RunScenario, RequiresCudaIsSkippedWithoutGpuEvenOnAuto) {
  nlohmann::json scenario = valid_scenario();
  scenario["device"] = "auto";
  scenario["requires"] = {"cuda"};
  const ScenarioResult result = run_loaded_scenario(load(scenario), {std::nullopt, false});
  EXPECT_EQ(result.verdict.outcome, Outcome::skipped);
}

TEST_F(RunScenario, ForcedCudaWithoutGpuIsAnInfrastructureError) {
  const ScenarioResult result =
      run_loaded_scenario(load(valid_scenario()), {DeviceChoice::cuda, false});
  EXPECT_EQ(result.verdict.outcome, Outcome::error);
  EXPECT_EQ(exit_code_of(result.verdict), kExitInfrastructure);
}

TEST_F(RunScenario, AutoPicksCudaWhenAvailable) {
  nlohmann::json scenario = valid_scenario();
  scenario["device"] = "auto";
  scenario["deepspeed"]["train_batch_size"] = 33;  // stop at the config stage
  scenario["expect"] = {{"outcome", "config_error"}, {"error", "batch_size_mismatch"}};
  EXPECT_EQ(run_loaded_scenario(load(scenario), {std::nullopt, true}).verdict.outcome,
            Outcome::reproduced);
}

TEST_F(RunScenario, ExpectedConfigErrorOfAnotherKindFails) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["fp16"] = {{"enabled", true}};
  scenario["deepspeed"]["bf16"] = {{"enabled", true}};
  scenario["deepspeed"]["train_batch_size"] = 33;
  scenario["expect"] = {{"outcome", "config_error"}, {"error", "batch_size_mismatch"}};
  const ScenarioResult result = run_loaded_scenario(load(scenario), {std::nullopt, false});
  // DeepSpeed checks precision before batch sizes, so that is the error it raises.
  EXPECT_EQ(result.verdict.outcome, Outcome::failed);
  EXPECT_EQ(result.verdict.found,
            "config error fp16_and_bf16_both_enabled: bfloat16 and fp16 modes cannot be "
            "simultaneously enabled");
}

TEST_F(RunScenario, BadFileBecomesAScenarioErrorResult) {
  const LoadAttempt attempt = try_load_scenario(write("bad.json", "{"));
  ASSERT_FALSE(attempt.scenario.has_value());
  EXPECT_EQ(attempt.failure.verdict.outcome, Outcome::error);
  EXPECT_EQ(exit_code_of(attempt.failure.verdict), kExitBadInput);
}

}  // namespace
}  // namespace trainrepro
