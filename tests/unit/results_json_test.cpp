// A results file reads back into the ScenarioResult that wrote it: the parent of a multi-rank run
// reports rank 0's result through the same type as a one-rank run. The round trip is checked on
// results of real runs (a diagnosed accumulation failure, a memory leak, a diverged run, a ZeRO
// judgement, a refused config, a file that did not load), and bad files are refused by pointer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness/pipeline/run_scenario.h"
#include "harness/report/results_json.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

const RunProvenance kProvenance{"2026-11-30T17:20:01Z", "ci-7",  "2 CPUs, 24 GiB RAM, no GPU",
                                "e759f91c2a1b+dirty",   "trainrepro run 'scenarios/a b'",
                                "0.1.0",                "2.11.0",
                                "13.0"};

ScenarioResult run_shipped(const std::string& relative) {
  const fs::path root(TRAINREPRO_SOURCE_DIR);
  RunOptions options;
  options.golden_dir = (root / "golden").string();
  LoadAttempt attempt = try_load_scenario((root / "scenarios" / relative).string());
  if (!attempt.scenario) return attempt.failure;
  return run_loaded_scenario(*attempt.scenario, options);
}

class ResultsRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(ResultsRoundTrip, ReadsBackWhatItWrote) {
  const ScenarioResult result = run_shipped(GetParam());
  const nlohmann::json written = result_to_json(result, kProvenance);
  // Through text, as it travels from rank 0 to the parent.
  const ScenarioResult read =
      result_from_json(nlohmann::json::parse(written.dump()), "results.json");
  // Compared as text: NaN is written as null, and NaN != NaN in memory.
  const nlohmann::json rewritten = nlohmann::json::parse(result_to_json(read, provenance_from_json(written, "results.json")).dump());
  const nlohmann::json original = nlohmann::json::parse(written.dump());
  EXPECT_TRUE(rewritten == original) << nlohmann::json::diff(original, rewritten).dump(1);
  EXPECT_EQ(read.verdict.outcome, result.verdict.outcome);
  EXPECT_EQ(exit_code_of(read.verdict), exit_code_of(result.verdict));
  EXPECT_EQ(read.zero.has_value(), result.zero.has_value());
  EXPECT_EQ(read.memory_samples.size(), result.memory_samples.size());
  // One schema for every outcome: no diagnosis is null at the top as in the training.
  if (result.verdict.diagnosis.empty()) {
    EXPECT_TRUE(written["diagnosis"].is_null());
  }
}

// A scenario's path is bytes on Linux: one that is not UTF-8 once cost the whole results file
// ("cannot write results: invalid UTF-8 byte", exit 3).
TEST(ResultsFileNames, APathThatIsNotUtf8IsWrittenWithReplacementCharacters) {
  const fs::path folder = fs::temp_directory_path() / "trainrepro-results-not-utf8";
  fs::remove_all(folder);
  fs::create_directories(folder);
  ScenarioResult result;
  result.name = "not-utf8";
  result.file = "scenarios/\xff\xfe/not-utf8.json";
  result.verdict.outcome = Outcome::passed;
  ResultsDirectoryReporter(folder, kProvenance).report_scenario(result);
  std::ifstream in(folder / "not-utf8.json");
  const nlohmann::json written = nlohmann::json::parse(in);
  EXPECT_EQ(written["scenario"]["file"], "scenarios/\xef\xbf\xbd\xef\xbf\xbd/not-utf8.json");
  fs::remove_all(folder);
}

TEST(ResultsFileNames, AFileThatDidNotLoadGetsAResultsFileNamedAfterItsPath) {
  ScenarioResult result;
  result.file = "scenarios/a b/bad\"name.json";
  EXPECT_EQ(results_file_stem(result), "not-loaded--scenarios--a_b--bad_name");
  result.name = "gas-missing";
  EXPECT_EQ(results_file_stem(result), "gas-missing");
}

INSTANTIATE_TEST_SUITE_P(
    ShippedScenarios, ResultsRoundTrip,
    ::testing::Values("accumulation/gas-missing.json", "memory/mlp-keep-loss-with-graph.json",
                      "varieties/adam-betas-out-of-range-diverges.json",
                      "zero/matrix-stage0-ws1-gas4-adamw.json",
                      "accumulation/batch-mismatch-tb-mb-gas.json",
                      "parameter-groups/mlp-group-lr-overwritten-by-warmupdecaylr.json",
                      "no/such/scenario.json"));

TEST(ResultsRoundTrip, NanAndInfinityReadBackAsNan) {
  ScenarioResult result = run_shipped("accumulation/gas-missing.json");
  ASSERT_TRUE(result.training.has_value());
  result.training->micro_step_losses[0] = std::numeric_limits<double>::infinity();
  result.training->steps[0].loss = std::nan("");
  const ScenarioResult read =
      result_from_json(nlohmann::json::parse(result_to_json(result, kProvenance).dump()), "results.json");
  EXPECT_TRUE(std::isnan(read.training->micro_step_losses[0]));
  EXPECT_TRUE(std::isnan(read.training->steps[0].loss));
}

// `--engine deepspeed` on a "deepspeed_releases" scenario: which list decided is kept; null (and
// an absent key, from older results) reads back as none.
TEST(ResultsRoundTrip, ReleaseExpectationReadsBack) {
  ScenarioResult result = run_shipped("accumulation/gas-missing.json");
  const nlohmann::json none = result_to_json(result, kProvenance);
  EXPECT_TRUE(none.at("release_expectation").is_null());
  EXPECT_EQ(result_from_json(none, "results.json").release_expectation, "");
  result.release_expectation =
      "DeepSpeed 0.18.5 is in /deepspeed_releases/reproduces_on: the "
      "bug is expected (failed)";
  const ScenarioResult read = result_from_json(
      nlohmann::json::parse(result_to_json(result, kProvenance).dump()), "results.json");
  EXPECT_EQ(read.release_expectation, result.release_expectation);
  nlohmann::json older = none;
  older.erase("release_expectation");
  EXPECT_EQ(result_from_json(older, "results.json").release_expectation, "");
}

std::string refusal_of(const nlohmann::json& json) {
  try {
    result_from_json(json, "results/x.json");
  } catch (const ResultsFormatError& error) {
    return error.what();
  }
  return "(accepted)";
}

TEST(ResultsRoundTrip, RefusesBadFilesWithFileAndPointer) {
  const nlohmann::json good = result_to_json(run_shipped("accumulation/gas-missing.json"), kProvenance);

  nlohmann::json wrong_type = good;
  wrong_type["training"]["steps"][1]["loss"] = "0.5";
  EXPECT_EQ(refusal_of(wrong_type),
            "results/x.json:/training/steps/1/loss: expected a number, found the string \"0.5\"");

  nlohmann::json missing = good;
  missing["plan"].erase("zero_stage");
  EXPECT_EQ(refusal_of(missing).rfind("results/x.json:/plan/zero_stage: missing", 0), 0u)
      << refusal_of(missing);

  nlohmann::json bad_element = good;
  bad_element["training"]["micro_step_losses"][2] = true;
  EXPECT_EQ(refusal_of(bad_element),
            "results/x.json:/training/micro_step_losses/2: expected a number, found true");

  nlohmann::json old_format = good;
  old_format["format_version"] = 1;
  EXPECT_NE(refusal_of(old_format).find("results/x.json:/format_version: expected 3"),
            std::string::npos)
      << refusal_of(old_format);

  nlohmann::json unknown_outcome = good;
  unknown_outcome["outcome"] = "passd";
  EXPECT_EQ(refusal_of(unknown_outcome),
            "results/x.json:/outcome: expected one of \"passed\", \"failed\", \"reproduced\", "
            "\"not-reproduced\", \"error\", \"skipped\", found the string \"passd\"");

  nlohmann::json inconsistent = good;
  ASSERT_EQ(good["exit_code"], 0);  // a reproduction that reproduced
  inconsistent["exit_code"] = 1;
  EXPECT_NE(refusal_of(inconsistent).find("results/x.json:/exit_code: expected 0"),
            std::string::npos)
      << refusal_of(inconsistent);

  nlohmann::json no_provenance = good;
  no_provenance["provenance"].erase("git_commit");
  try {
    provenance_from_json(no_provenance, "results/x.json");
    ADD_FAILURE() << "a provenance without its commit was accepted";
  } catch (const ResultsFormatError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("results/x.json:/provenance/git_commit: missing", 0),
              0u)
        << error.what();
  }

  EXPECT_EQ(refusal_of(nlohmann::json::array()),
            "results/x.json: expected an object, found an array of 0 values");
}

}  // namespace
}  // namespace trainrepro
