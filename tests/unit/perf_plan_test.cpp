// perf run's plan for scenarios of several ranks: measured in rank processes (every point of a
// world-size sweep, one rank included), each point's document carrying its swept value for the
// ranks to load, the loops that train one rank refused, and a machine without mpirun or with too
// few GPUs skipping the whole file rather than a part of a sweep.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "harness/perf/perf_plan.h"
#include "harness/scenario/json_document.h"

namespace trainrepro {
namespace {

const std::string kSweep =
    std::string(TRAINREPRO_SOURCE_DIR) + "/scenarios/perf/mlp-zero2-world-size-sweep.json";

// The sweep's file with `change` applied, written to a temporary file.
std::string variant(const std::string& name, const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json document = read_json_file(kSweep);
  change(document);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("perf-plan-test-" + name + ".json")).string();
  std::ofstream(path) << document.dump(2);
  return path;
}

TEST(PerfPlan, EveryPointOfAWorldSizeSweepRunsOnRanksWithItsOwnDocument) {
  const PerfPlan plan = plan_perf_run({kSweep}, PerfPlanOptions{});
  ASSERT_EQ(plan.benchmarks.size(), 2u);
  for (int64_t ranks : {1, 2}) {
    const PlannedBenchmark& point = plan.benchmarks[static_cast<size_t>(ranks - 1)];
    EXPECT_EQ(point.name, "perf-mlp-zero2-world-size-sweep/world_size:" + std::to_string(ranks));
    EXPECT_EQ(point.plan.batch.world_size, ranks);
    EXPECT_EQ(point.document.at("world_size"), ranks);
    EXPECT_TRUE(point.runs_on_ranks());
  }
}

TEST(PerfPlan, ARankScenarioOutsideASweepRunsOnRanksOnlyWithSeveral) {
  const std::string one = variant("one-rank", [](nlohmann::json& document) {
    document["performance"].erase("scaling");
    document["world_size"] = 1;
    document["name"] = "one-rank";
  });
  const std::string two = variant("two-ranks", [](nlohmann::json& document) {
    document["performance"].erase("scaling");
  });
  const PerfPlan plan = plan_perf_run({one, two}, PerfPlanOptions{});
  ASSERT_EQ(plan.benchmarks.size(), 2u);
  EXPECT_FALSE(plan.benchmarks[0].runs_on_ranks());
  EXPECT_TRUE(plan.benchmarks[1].runs_on_ranks());
}

TEST(PerfPlan, LoopsThatTrainOneRankAreRefusedForSeveral) {
  const std::string eager = variant("eager-ranks", [](nlohmann::json& document) {
    document["performance"]["loop"] = "hand_written";
  });
  try {
    plan_perf_run({eager}, PerfPlanOptions{});
    FAIL() << "a hand-written loop of two ranks was planned";
  } catch (const PerfInputError& error) {
    EXPECT_NE(std::string(error.what()).find(eager + " (with /world_size = 1):/performance/loop: "
                                             "the \"hand_written\" loop trains one rank"),
              std::string::npos)
        << error.what();
  }
}

TEST(PerfPlan, WithoutMpirunOrEnoughGpusTheWholeSweepIsSkipped) {
  PerfPlanOptions no_mpirun;
  no_mpirun.mpirun_available = false;
  PerfPlan plan = plan_perf_run({kSweep}, no_mpirun);
  EXPECT_TRUE(plan.benchmarks.empty());
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_NE(plan.skipped[0].find("mpirun is not on the PATH"), std::string::npos);

  // One GPU: the one-rank point could run, the two-rank one could not; neither is measured.
  PerfPlanOptions one_gpu;
  one_gpu.cuda_available = true;
  one_gpu.cuda_devices = 1;
  one_gpu.device_override = DeviceChoice::cuda;
  plan = plan_perf_run({kSweep}, one_gpu);
  EXPECT_TRUE(plan.benchmarks.empty());
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_NE(plan.skipped[0].find("2 ranks on CUDA, one per GPU, and LibTorch finds 1"),
            std::string::npos)
      << plan.skipped[0];
}

}  // namespace
}  // namespace trainrepro
