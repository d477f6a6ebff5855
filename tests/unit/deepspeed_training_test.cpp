// `run --engine deepspeed` before any Python runs: what this slice of the worker skips (with the
// reason), and the job it is handed (the scenario as written, the golden's model, data and file).
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/engines/worker_training.h"
#include "harness/scenario/load_scenario.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class DeepSpeedTraining : public ScenarioFileTest {
 protected:
  Scenario load(const nlohmann::json& scenario) {
    return load_scenario(write("scenario.json", scenario.dump()));
  }
  static Plan plan_of(const Scenario& scenario) {
    return std::get<Plan>(resolve_plan(scenario, Device::cpu));
  }
};

TEST_F(DeepSpeedTraining, PlainScenarioIsExpressible) {
  const Scenario scenario = load(valid_scenario());
  EXPECT_EQ(unsupported_by_deepspeed_worker(scenario, plan_of(scenario)), std::nullopt);
}

TEST_F(DeepSpeedTraining, LambIsSkippedForWantOfACpuKernel) {
  nlohmann::json written = valid_scenario();
  written["deepspeed"]["optimizer"] = {{"type", "Lamb"}, {"params", {{"lr", 0.001}}}};
  const Scenario scenario = load(written);
  const auto reason = unsupported_by_deepspeed_worker(scenario, plan_of(scenario));
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("FusedLamb has no CPU kernel"), std::string::npos) << *reason;
}

TEST_F(DeepSpeedTraining, LeakHabitsAreMeasuredOnTheRealEngine) {
  nlohmann::json written = valid_scenario();
  written["loop"] = {{"keep", "loss_with_graph"}};
  written["expect"] = {{"outcome", "diagnosis"}, {"diagnosis", "host_memory_leak"}};
  const Scenario scenario = load(written);
  EXPECT_EQ(unsupported_by_deepspeed_worker(scenario, plan_of(scenario)), std::nullopt);
}

// The worker performs the loop's gathered ZeRO-3 parameters (GatheredParameters after each
// step) and the census judges them, as the reference engine does: nothing to skip.
TEST_F(DeepSpeedTraining, GatheredParametersRunOnTheWorker) {
  for (const char* keep : {"gathered_parameters", "gathered_parameter_norms"}) {
    nlohmann::json written = valid_scenario();
    written["loop"] = {{"keep", keep}};
    if (std::string(keep) == "gathered_parameters") {
      written["expect"] = {{"outcome", "diagnosis"}, {"diagnosis", "gathered_parameters_kept"}};
    }
    const Scenario scenario = load(written);
    const auto reason = unsupported_by_deepspeed_worker(scenario, plan_of(scenario));
    EXPECT_FALSE(reason) << keep << ": " << *reason;
  }
}

TEST_F(DeepSpeedTraining, EvaluationCallingBackwardIsSkippedWithTheReason) {
  nlohmann::json written = valid_scenario();
  written["loop"] = {{"evaluation", {{"no_grad", false}, {"backward", true}}}};
  const Scenario scenario = load(written);
  const auto reason = unsupported_by_deepspeed_worker(scenario, plan_of(scenario));
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("/loop/evaluation/backward"), std::string::npos) << *reason;
}

TEST_F(DeepSpeedTraining, ModelStateFiguresAndPeakBudgetsAreSkippedWithTheReason) {
  nlohmann::json written = valid_scenario();
  written["expect"] = {{"outcome", "diagnosis"}, {"diagnosis", "model_states_differ_from_zero"}};
  Scenario scenario = load(written);
  auto reason = unsupported_by_deepspeed_worker(scenario, plan_of(scenario));
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("model-state and traffic figures"), std::string::npos) << *reason;
  written = valid_scenario();
  written["memory"] = {{"budget_peak_bytes", 1000000}};
  scenario = load(written);
  reason = unsupported_by_deepspeed_worker(scenario, plan_of(scenario));
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("/memory/budget_peak_bytes"), std::string::npos) << *reason;
}

// The worker runs the Trainer's loop: DeepSpeed gets the config as the Trainer filled it (no
// "auto" left), and the job carries the Trainer's window, boundary and its own AdamW.
TEST_F(DeepSpeedTraining, HuggingFaceTrainerJobCarriesTheFilledConfigAndTheTrainersLoop) {
  const Scenario scenario = load(nlohmann::json::parse(
      R"({"model": {"name": "mlp", "options": {"dims": [12, 24, 3], "activation": "tanh"}, "seed": 61}, "data": {"name": "classification", "options": {"features": 12, "classes": 3}, "seed": 62}, "deepspeed": {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}, "hf_trainer": {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4, "learning_rate": 0.001, "weight_decay": 0.1, "accelerate_version": "1.8.0"}, "golden": {"train_batch_size": 8, "steps": 3}, "expect": {"outcome": "pass"}, "name": "trainer", "description": "A Trainer run."})"));
  EXPECT_FALSE(unsupported_by_deepspeed_worker(scenario, plan_of(scenario)));
  Golden golden;
  golden.file = "golden/some.safetensors";
  golden.key = {{"model", {{"name", "mlp"}}}, {"data", {{"name", "classification"}}}};
  const nlohmann::json job = deepspeed_job(scenario, golden);
  EXPECT_EQ(job.at("deepspeed").at("train_micro_batch_size_per_gpu"), 2);
  EXPECT_EQ(job.at("deepspeed").at("gradient_accumulation_steps"), 1);  // accelerate inserts it
  EXPECT_EQ(job.at("deepspeed").at("zero_allow_untested_optimizer"), true);
  const nlohmann::json& trainer = job.at("trainer");
  EXPECT_EQ(trainer.at("gradient_accumulation_steps"), 4);
  EXPECT_EQ(trainer.at("explicit_boundary"), true);
  EXPECT_DOUBLE_EQ(trainer.at("optimizer").at("lr").get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(trainer.at("optimizer").at("weight_decay").get<double>(), 0.1);
  EXPECT_EQ(trainer.at("optimizer").at("as_deepspeed_cpu_adam"), false);  // nothing offloaded
}

TEST_F(DeepSpeedTraining, JobCarriesTheScenarioAsWrittenAndTheGoldensFiles) {
  nlohmann::json written = valid_scenario();
  written["loop"] = {{"zero_grad", "every_micro_step"}};
  const Scenario scenario = load(written);
  Golden golden;
  golden.file = "golden/some.safetensors";
  golden.key = {{"model", {{"name", "mlp"}}}, {"data", {{"name", "classification"}}}};
  golden.parameter_names = {"layers.0.weight", "layers.0.bias"};
  const nlohmann::json job = deepspeed_job(scenario, golden);
  EXPECT_EQ(job.at("deepspeed"), written.at("deepspeed"));
  EXPECT_EQ(job.at("loop"), written.at("loop"));
  EXPECT_EQ(job.at("steps"), scenario.golden.steps);
  EXPECT_EQ(job.at("loop_steps"), scenario.loop.steps);
  EXPECT_EQ(job.at("memory"), true);
  EXPECT_EQ(job.at("world_size"), 1);
  EXPECT_EQ(job.at("model"), golden.key.at("model"));
  EXPECT_TRUE(job.at("parameter_groups").is_null());
  EXPECT_EQ(job.at("golden").at("parameters"), nlohmann::json(golden.parameter_names));
  EXPECT_TRUE(std::filesystem::path(job.at("golden").at("file").get<std::string>()).is_absolute());
}

}  // namespace
}  // namespace trainrepro
