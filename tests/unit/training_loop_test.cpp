// The loop's own bookkeeping: each optimizer step records the backwards the loop ran before it,
// whether or not they went through the engine (the engine counts only its own).
#include <gtest/gtest.h>

#include "harness/loop/training_loop.h"
#include "harness/scenario/load_scenario.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class TrainingLoop : public ScenarioFileTest {};

// These tests count steps, not memory: the loop runs golden.steps, not a memory verdict's 22.
void opt_out_of_memory(nlohmann::json& scenario) {
  scenario["memory"] = {{"judge", false}, {"reason", "the test counts the loop's steps"}};
}

TEST_F(TrainingLoop, StepsCountBackwardsThatBypassTheEngine) {
  nlohmann::json scenario = valid_scenario();  // train 32 = micro 8 x GAS 4
  scenario["golden"]["steps"] = 3;
  opt_out_of_memory(scenario);
  for (const char* scaling : {"engine", "none"}) {
    scenario["loop"] = {{"loss_scaling", scaling}, {"forward", "module"}};
    const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
    const Plan plan = std::get<Plan>(resolve_plan(loaded, Device::cpu));
    const Trace trace =
        run_training_loop(loaded.model, loaded.data, loaded.loop, plan, LoopOptions{3});
    ASSERT_EQ(trace.steps.size(), 3u) << scaling;
    for (size_t s = 0; s < trace.steps.size(); ++s) {
      EXPECT_EQ(trace.steps[s].micro_step, 4 * static_cast<int64_t>(s + 1)) << scaling;
    }
  }
}

// The Hugging Face Trainer with GAS 4 on a config without a gradient_accumulation_steps key
// (DeepSpeed resolves GAS 1): accelerate 1.15.0 hands DeepSpeed the Trainer's boundary, an
// optimizer step every 4 micro-batches; accelerate 1.7.0 steps DeepSpeed after every backward,
// and its GAS 1 makes every micro-batch a step.
TEST_F(TrainingLoop, TrainerStepsAtItsOwnWindowWhenAcceleratePassesTheBoundary) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"] = {{"train_micro_batch_size_per_gpu", "auto"},
                           {"zero_optimization", {{"stage", 0}}}};
  scenario["golden"] = {{"train_batch_size", 8}, {"steps", 3}};
  opt_out_of_memory(scenario);
  for (const auto& [release, micro_steps_per_step] :
       std::vector<std::pair<std::string, int64_t>>{{"1.15.0", 4}, {"1.7.0", 1}}) {
    scenario["hf_trainer"] = {{"per_device_train_batch_size", 2},
                              {"gradient_accumulation_steps", 4},
                              {"accelerate_version", release}};
    const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
    const Plan plan = std::get<Plan>(resolve_plan(loaded, Device::cpu));
    const Trace trace =
        run_training_loop(loaded.model, loaded.data, loaded.loop, plan, LoopOptions{3});
    ASSERT_EQ(trace.steps.size(), 3u) << release;
    for (size_t s = 0; s < trace.steps.size(); ++s) {
      EXPECT_EQ(trace.steps[s].micro_step, micro_steps_per_step * static_cast<int64_t>(s + 1))
          << release;
    }
  }
}

}  // namespace
}  // namespace trainrepro
