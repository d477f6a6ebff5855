// `perf run --engine deepspeed|fsdp2`: the twin benchmarks' names and each pair's step-time ratio, read
// from a run built by hand (no timing measured here).
#include <gtest/gtest.h>

#include "harness/perf/engine_ratio.h"

namespace trainrepro {
namespace {

PerfBenchmark benchmark_with_steps(const std::string& name, std::vector<double> steps,
                                   double calibration) {
  PerfBenchmark benchmark;
  benchmark.name = name;
  for (double step : steps) {
    PerfRepetition repetition;
    repetition.step_seconds = step;
    repetition.calibration_seconds = calibration;
    benchmark.repetitions.push_back(repetition);
  }
  return benchmark;
}

TEST(EngineRatio, TwinNameCarriesTheRelease) {
  EXPECT_EQ(engine_twin_name("perf-mlp-adamw-gas4", "deepspeed 0.19.8"),
            "perf-mlp-adamw-gas4 [deepspeed 0.19.8]");
}

TEST(EngineRatio, RatioIsReferenceMedianOverTwinMedian) {
  PerfRun run;
  run.benchmarks.push_back(benchmark_with_steps("mlp", {0.002, 0.001, 0.003}, 0.001));
  run.benchmarks.push_back(benchmark_with_steps("gpt", {0.010}, 0.001));
  PerfBenchmark twin = benchmark_with_steps("mlp [deepspeed 0.19.8]", {0.008, 0.004, 0.020}, 0.002);
  twin.loop = "deepspeed";
  twin.twin_of = "mlp";
  run.benchmarks.push_back(twin);

  const std::vector<EngineStepRatio> ratios = engine_step_ratios(run);
  ASSERT_EQ(ratios.size(), 1u);  // the GPT has no twin
  EXPECT_EQ(ratios[0].numerator, "mlp");
  EXPECT_EQ(ratios[0].denominator, "mlp [deepspeed 0.19.8]");
  EXPECT_DOUBLE_EQ(ratios[0].ratio, 0.002 / 0.008);
  // Calibration units: (0.002 / 0.001) / (0.008 / 0.002).
  EXPECT_DOUBLE_EQ(ratios[0].normalised_ratio, 2.0 / 4.0);
}

TEST(EngineRatio, TwoEnginesGiveEachOverTheReferenceAndTheSecondOverTheFirst) {
  PerfRun run;
  run.benchmarks.push_back(benchmark_with_steps("gpt", {0.010}, 0.001));
  PerfBenchmark deepspeed = benchmark_with_steps("gpt [deepspeed 0.19.8]", {0.020}, 0.001);
  deepspeed.loop = "deepspeed";
  deepspeed.twin_of = "gpt";
  run.benchmarks.push_back(deepspeed);
  PerfBenchmark fsdp2 = benchmark_with_steps("gpt [fsdp2 torch 2.11.0]", {0.040}, 0.002);
  fsdp2.loop = "fsdp2";
  fsdp2.twin_of = "gpt";
  run.benchmarks.push_back(fsdp2);

  const std::vector<EngineStepRatio> ratios = engine_step_ratios(run);
  ASSERT_EQ(ratios.size(), 3u);
  EXPECT_EQ(ratios[0].denominator, "gpt [deepspeed 0.19.8]");
  EXPECT_DOUBLE_EQ(ratios[0].ratio, 0.5);
  EXPECT_EQ(ratios[1].denominator, "gpt [fsdp2 torch 2.11.0]");
  EXPECT_DOUBLE_EQ(ratios[1].ratio, 0.25);
  EXPECT_EQ(ratios[2].numerator, "gpt [fsdp2 torch 2.11.0]");
  EXPECT_EQ(ratios[2].denominator, "gpt [deepspeed 0.19.8]");
  EXPECT_DOUBLE_EQ(ratios[2].ratio, 2.0);
  EXPECT_DOUBLE_EQ(ratios[2].normalised_ratio, (0.040 / 0.002) / (0.020 / 0.001));
}

TEST(EngineRatio, TwinWithoutRepetitionsOrPartnerGivesNoRatio) {
  PerfRun run;
  PerfBenchmark orphan = benchmark_with_steps("gone [deepspeed 0.19.8]", {0.01}, 0.001);
  orphan.twin_of = "gone";
  run.benchmarks.push_back(orphan);
  run.benchmarks.push_back(benchmark_with_steps("mlp", {0.002}, 0.001));
  PerfBenchmark unmeasured = benchmark_with_steps("mlp [deepspeed 0.19.8]", {}, 0.001);
  unmeasured.twin_of = "mlp";
  run.benchmarks.push_back(unmeasured);
  EXPECT_TRUE(engine_step_ratios(run).empty());
}

}  // namespace
}  // namespace trainrepro
