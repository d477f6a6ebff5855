// The loop's own bookkeeping: each optimizer step records the backwards the loop ran before it,
// whether or not they went through the engine (the engine counts only its own).
#include <gtest/gtest.h>

#include "harness/loop/training_loop.h"
#include "harness/scenario/load_scenario.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class TrainingLoop : public ScenarioFileTest {};

TEST_F(TrainingLoop, StepsCountBackwardsThatBypassTheEngine) {
  nlohmann::json scenario = valid_scenario();  // train 32 = micro 8 x GAS 4
  scenario["golden"]["steps"] = 3;
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

}  // namespace
}  // namespace trainrepro
