// `perf run --engine deepspeed`: which planned benchmarks get a twin trained by the real DeepSpeed
// (the harness loop on one scenario as written) and why the others do not. No DeepSpeed needed.
#include <gtest/gtest.h>

#include <string>

#include "harness/pipeline/deepspeed_perf.h"

namespace trainrepro {
namespace {

std::string perf_scenario(const std::string& file) {
  return std::string(TRAINREPRO_SOURCE_DIR) + "/scenarios/perf/" + file;
}

TEST(DeepSpeedPerf, HarnessBenchmarksGetATwinOtherLoopsAndSweepsAreLeftOutWithAReason) {
  PerfPlan plan = plan_perf_run(
      {perf_scenario("mlp-adamw-gas4.json"), perf_scenario("mlp-adamw-gas4-hand-written.json"),
       perf_scenario("mlp-gas-sweep.json")},
      PerfPlanOptions{});
  const size_t planned = plan.benchmarks.size();
  ASSERT_GE(planned, 4u);  // the MLP, the hand-written loop, at least two sweep points
  const std::vector<std::string> left_out = add_deepspeed_twins(plan, "0.19.8");

  ASSERT_EQ(plan.benchmarks.size(), planned + 1);
  const PlannedBenchmark& twin = plan.benchmarks.back();
  EXPECT_EQ(twin.name, "perf-mlp-adamw-gas4 [deepspeed 0.19.8]");
  EXPECT_EQ(twin.engine, "deepspeed 0.19.8");
  EXPECT_EQ(twin.twin_of, "perf-mlp-adamw-gas4");
  EXPECT_TRUE(twin.sweep_pointer.empty());

  ASSERT_EQ(left_out.size(), planned - 1);
  bool hand_written_said = false;
  for (const std::string& line : left_out) {
    if (line.find("hand_written loop, not the harness's") != std::string::npos) {
      hand_written_said = true;
    } else {
      EXPECT_NE(line.find("a point of a sweep"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(hand_written_said);
}

}  // namespace
}  // namespace trainrepro
