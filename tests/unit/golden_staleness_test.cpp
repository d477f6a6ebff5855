// A golden that no longer starts where the run starts (a model's initialisation, a data
// generator or the parameter order changed) is named stale, with the command that regenerates
// it, instead of failing every scenario with "no known cause".
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "harness/golden/golden_run.h"
#include "harness/loop/training_loop.h"
#include "harness/scenario/load_scenario.h"
#include "harness/verdict/golden_staleness.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class GoldenStaleness : public ScenarioFileTest {
 protected:
  void SetUp() override {
    ScenarioFileTest::SetUp();
    nlohmann::json scenario = valid_scenario();
    scenario["golden"]["steps"] = 1;
    scenario_ = load_scenario(write("scenario.json", scenario.dump()));
    const Plan plan = std::get<Plan>(resolve_plan(scenario_, Device::cpu));
    golden_ = compute_golden(scenario_);
    trace_ = run_training_loop(scenario_.model, scenario_.data, scenario_.loop, plan,
                               LoopOptions{/*recorded_steps=*/1});
  }
  Scenario scenario_;
  Golden golden_;
  Trace trace_;
};

TEST_F(GoldenStaleness, AFloat32RunFromTheGoldensStartIsNotStale) {
  EXPECT_EQ(find_stale_golden(scenario_, trace_, golden_), std::nullopt);
}

TEST_F(GoldenStaleness, ChangedInitialisationIsNamedWithTheCommand) {
  golden_.initial_parameters[1] = golden_.initial_parameters[1] + 0.25;
  const auto stale = find_stale_golden(scenario_, trace_, golden_);
  ASSERT_TRUE(stale.has_value());
  EXPECT_NE(stale->find("golden is stale: the run's initial " + golden_.parameter_names[1] +
                        " differs from the golden's by up to 0.25"),
            std::string::npos)
      << *stale;
  EXPECT_NE(stale->find("regenerate it with: build/trainrepro golden --update"), std::string::npos);
}

TEST_F(GoldenStaleness, ChangedSamplesOrParameterOrderAreNamed) {
  Golden samples = golden_;
  samples.data.inputs = samples.data.inputs + 1.0;
  ASSERT_TRUE(find_stale_golden(scenario_, trace_, samples).has_value());
  EXPECT_NE(find_stale_golden(scenario_, trace_, samples)->find("inputs differ"),
            std::string::npos);
  Golden order = golden_;
  std::swap(order.parameter_names[0], order.parameter_names[1]);
  EXPECT_NE(find_stale_golden(scenario_, trace_, order)->find("names or order changed"),
            std::string::npos);
}

// A golden written on another CPU: its samples rounded in another order (a few units in the
// last place) are the same samples. Twice the allowance is not.
TEST_F(GoldenStaleness, SamplesRoundedOnAnotherCpuAreNotStale) {
  Golden other_cpu = golden_;
  const at::Tensor inputs = other_cpu.data.inputs;
  const double scale = std::max(1.0, inputs.abs().max().item<double>());
  other_cpu.data.inputs = inputs + inputs.abs() * 4 * std::numeric_limits<double>::epsilon();
  EXPECT_EQ(find_stale_golden(scenario_, trace_, other_cpu), std::nullopt);
  other_cpu.data.inputs = inputs + 2e-12 * scale;
  EXPECT_TRUE(find_stale_golden(scenario_, trace_, other_cpu).has_value());
}

}  // namespace
}  // namespace trainrepro
