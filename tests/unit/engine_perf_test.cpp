// `perf run --engine deepspeed|fsdp2`: which planned benchmarks get a twin trained by another
// engine (the harness loop on one scenario as written) and why the others do not. Neither
// DeepSpeed nor FSDP2 is run.
#include <gtest/gtest.h>

#include <string>

#include "harness/pipeline/engine_perf.h"

namespace trainrepro {
namespace {

std::string perf_scenario(const std::string& file) {
  return std::string(TRAINREPRO_SOURCE_DIR) + "/scenarios/perf/" + file;
}

TEST(EnginePerf, HarnessBenchmarksGetATwinOtherLoopsAndSweepsAreLeftOutWithAReason) {
  PerfPlan plan = plan_perf_run(
      {perf_scenario("mlp-adamw-gas4.json"), perf_scenario("mlp-adamw-gas4-hand-written.json"),
       perf_scenario("mlp-gas-sweep.json")},
      PerfPlanOptions{});
  const size_t planned = plan.benchmarks.size();
  ASSERT_GE(planned, 4u);  // the MLP, the hand-written loop, at least two sweep points
  WorkerVersions deepspeed;
  deepspeed.engine = "deepspeed";
  deepspeed.deepspeed = "0.19.8";
  deepspeed.torch = "2.11.0";
  const std::vector<std::string> left_out = add_engine_twins(plan, deepspeed);

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

TEST(EnginePerf, EachEngineTwinsTheReferenceBenchmarksOnlyNeverAnotherEnginesTwin) {
  PerfPlan plan = plan_perf_run({perf_scenario("mlp-adamw-gas4.json")}, PerfPlanOptions{});
  ASSERT_EQ(plan.benchmarks.size(), 1u);
  WorkerVersions deepspeed, fsdp2;
  deepspeed.engine = "deepspeed";
  deepspeed.deepspeed = "0.19.8";
  fsdp2.engine = "fsdp2";
  fsdp2.torch = "2.11.0";
  EXPECT_TRUE(add_engine_twins(plan, deepspeed).empty());
  EXPECT_TRUE(add_engine_twins(plan, fsdp2).empty());
  ASSERT_EQ(plan.benchmarks.size(), 3u);
  EXPECT_EQ(plan.benchmarks[2].name, "perf-mlp-adamw-gas4 [fsdp2 torch 2.11.0]");
  EXPECT_EQ(plan.benchmarks[2].engine, "fsdp2 torch 2.11.0");
  EXPECT_EQ(plan.benchmarks[2].twin_of, "perf-mlp-adamw-gas4");
}

TEST(EnginePerf, WhatFsdp2CannotTrainIsLeftOutWithItsReason) {
  // bf16 on CUDA: the FSDP2 worker trains on the CPU in this slice.
  PerfPlanOptions options;
  options.device_override = DeviceChoice::cpu;
  PerfPlan plan = plan_perf_run({perf_scenario("mlp-adamw-gas4.json")}, options);
  ASSERT_EQ(plan.benchmarks.size(), 1u);
  plan.benchmarks[0].plan.device = Device::cuda;
  WorkerVersions fsdp2;
  fsdp2.engine = "fsdp2";
  const std::vector<std::string> left_out = add_engine_twins(plan, fsdp2);
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_NE(left_out[0].find("not yet on --engine fsdp2: CUDA"), std::string::npos) << left_out[0];
  EXPECT_EQ(plan.benchmarks.size(), 1u);
}

}  // namespace
}  // namespace trainrepro
