// The perf run's Google Benchmark JSON: what perf run writes reads back the same, aggregates are
// recomputed rather than read, and a file of Google Benchmark itself (no calibration) still reads.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/perf/benchmark_json.h"
#include "harness/perf/confirm_regression.h"
#include "harness/perf/figure_values.h"
#include "harness/perf/perf_compare.h"

namespace trainrepro {
namespace {

PerfRun two_repetition_run(double step_seconds) {
  PerfRun run;
  run.context.commit = "abc123";
  run.context.executable = "/bin/true";
  run.context.planted_slowdown = 0.1;
  run.context.scenario_paths = {"scenarios/perf"};
  run.context.engines = {"deepspeed==0.19.8", "fsdp2"};
  PerfBenchmark benchmark;
  benchmark.name = "perf-x";
  benchmark.measured_steps = 10;
  benchmark.loop = "engine";
  for (int i = 0; i < 6; ++i) {
    PerfRepetition repetition;
    repetition.step_seconds = step_seconds * (1.0 + 0.001 * i);
    repetition.cpu_step_seconds = repetition.step_seconds;
    repetition.calibration_seconds = 0.01;
    repetition.samples_per_second = 32.0 / repetition.step_seconds;
    repetition.peak_tensor_bytes = 1000;
    repetition.tokens_per_second = 7.0;
    benchmark.repetitions.push_back(repetition);
  }
  run.benchmarks.push_back(benchmark);
  return run;
}

TEST(PerfJson, RoundTripKeepsEveryFigureAndTheContext) {
  const PerfRun run = two_repetition_run(0.002);
  const PerfRun back = perf_run_from_json(perf_run_to_json(run), "memory");
  ASSERT_EQ(back.benchmarks.size(), 1u);
  const PerfBenchmark& benchmark = back.benchmarks[0];
  EXPECT_EQ(benchmark.name, "perf-x");
  EXPECT_EQ(benchmark.loop, "engine");
  EXPECT_EQ(benchmark.measured_steps, 10);
  ASSERT_EQ(benchmark.repetitions.size(), 6u);  // the aggregates are not read as repetitions
  EXPECT_NEAR(benchmark.repetitions[3].step_seconds, 0.002 * 1.003, 1e-15);
  EXPECT_NEAR(benchmark.repetitions[3].calibration_seconds, 0.01, 1e-15);
  EXPECT_EQ(benchmark.repetitions[3].peak_tensor_bytes, 1000);
  EXPECT_EQ(benchmark.repetitions[3].tokens_per_second, 7.0);
  EXPECT_FALSE(benchmark.repetitions[3].mfu.has_value());
  EXPECT_EQ(back.context.commit, "abc123");
  EXPECT_EQ(back.context.planted_slowdown, 0.1);
  EXPECT_EQ(back.context.scenario_paths, std::vector<std::string>{"scenarios/perf"});
  EXPECT_EQ(back.context.engines, (std::vector<std::string>{"deepspeed==0.19.8", "fsdp2"}));
}

// `perf compare` reruns a suspected twin on the engine that measured it, not on ours alone.
TEST(PerfCompare, RerunMeasuresAgainOnTheRecordedEngines) {
  const std::vector<std::string> arguments =
      rerun_arguments("/opt/trainrepro", two_repetition_run(0.01), "^perf-x$", 60, 1, "out.json");
  std::string command;
  for (const std::string& word : arguments) command += (command.empty() ? "" : " ") + word;
  EXPECT_EQ(command,
            "/opt/trainrepro perf run scenarios/perf --filter ^perf-x$ --repetitions 60 --out "
            "out.json --take-turns --pin-cpu 1 --engine deepspeed==0.19.8 --engine fsdp2 "
            "--plant-slowdown 0.100000");
  PerfRun ours_only = two_repetition_run(0.01);
  ours_only.context.engines.clear();
  const std::vector<std::string> without =
      rerun_arguments("/opt/trainrepro", ours_only, "^perf-x$", 60, 1, "out.json");
  EXPECT_EQ(std::count(without.begin(), without.end(), "--engine"), 0);
}

TEST(PerfJson, GoogleBenchmarksOwnFileReadsWithoutCalibration) {
  const nlohmann::json document = nlohmann::json::parse(R"({
    "context": {"date": "2026-12-01T10:00:00+00:00", "host_name": "h", "executable": "./b"},
    "benchmarks": [
      {"name": "BM_Step", "run_name": "BM_Step", "run_type": "iteration", "iterations": 100,
       "real_time": 1500.0, "cpu_time": 1400.0, "time_unit": "us"},
      {"name": "BM_Step", "run_name": "BM_Step", "run_type": "iteration", "iterations": 100,
       "real_time": 1600.0, "cpu_time": 1500.0, "time_unit": "us"},
      {"name": "BM_Step_mean", "run_name": "BM_Step", "run_type": "aggregate",
       "aggregate_name": "mean", "iterations": 2, "real_time": 1550.0, "cpu_time": 1450.0,
       "time_unit": "us"}]})");
  const PerfRun run = perf_run_from_json(document, "gbench.json");
  ASSERT_EQ(run.benchmarks.size(), 1u);
  ASSERT_EQ(run.benchmarks[0].repetitions.size(), 2u);
  EXPECT_NEAR(run.benchmarks[0].repetitions[1].step_seconds, 1.6e-3, 1e-15);
  EXPECT_EQ(run.benchmarks[0].repetitions[1].calibration_seconds, 1.0);
}

TEST(PerfJson, BadFieldsNameTheirPointer) {
  nlohmann::json document = perf_run_to_json(two_repetition_run(0.002));
  document["benchmarks"][2]["time_unit"] = "fortnights";
  try {
    perf_run_from_json(document, "x.json");
    FAIL() << "read a time unit nobody knows";
  } catch (const PerfFormatError& error) {
    EXPECT_NE(std::string(error.what()).find("x.json:/benchmarks/2/time_unit: expected \"ns\""),
              std::string::npos)
        << error.what();
  }
  document = nlohmann::json::object({{"context", nlohmann::json::object()}});
  EXPECT_THROW(perf_run_from_json(document, "x.json"), PerfFormatError);
}

TEST(PerfCompare, CallsARegressionOnlyWhenSignificantAndLargeEnough) {
  const PerfRun before = two_repetition_run(0.002);
  const CompareOptions options{0.01, 0.05};
  // 3 % slower in every repetition: significant, but below the minimum effect: not called, only
  // suspected (at least half the minimum effect, p < the screen's 0.05), so a rerun decides.
  EXPECT_EQ(compare_perf_runs(before, two_repetition_run(0.00206), options).rows[0].call,
            ChangeCall::suspected);
  // 2 % slower: below the screen too.
  EXPECT_EQ(compare_perf_runs(before, two_repetition_run(0.00204), options).rows[0].call,
            ChangeCall::unchanged);
  // 10 % slower: a regression; 10 % faster: an improvement.
  const PerfComparison slower = compare_perf_runs(before, two_repetition_run(0.0022), options);
  EXPECT_EQ(slower.rows[0].figure, "step_time");
  EXPECT_EQ(slower.rows[0].call, ChangeCall::regression);
  EXPECT_NEAR(slower.rows[0].ratio, 1.1, 1e-9);
  EXPECT_EQ(slower.rows[0].cliffs_delta, 1.0);
  EXPECT_EQ(compare_perf_runs(before, two_repetition_run(0.0018), options).rows[0].call,
            ChangeCall::improvement);
  // The same data compared with itself: p = 1.
  EXPECT_EQ(compare_perf_runs(before, before, options).rows[0].p_value, 1.0);
}

}  // namespace
}  // namespace trainrepro
