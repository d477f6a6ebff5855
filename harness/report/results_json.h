// The results file of one scenario (results/<name>.json): versioned JSON with the resolved plan,
// the verdict and the timings, for HTML reports and performance tracking. Written atomically.
#pragma once
#include <filesystem>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/report/reporter.h"

namespace trainrepro {

// 2: the verdict's error source, the training's mismatch and divergence in words, and every
// optimizer setting, so a results file reads back into the ScenarioResult that wrote it.
constexpr int kResultsFormatVersion = 2;

nlohmann::json result_to_json(const ScenarioResult& result);
// The inverse, for results another process wrote (rank 0 of a multi-rank run, an earlier run for
// a report). `source` names the file for messages; throws ResultsFormatError, located by JSON
// pointer, on a file that is not a results file of this format version. A NaN or infinite number
// (written as null, JSON has neither) reads back as NaN. CUDA snapshots are not in the file.
ScenarioResult result_from_json(const nlohmann::json& json, const std::string& source);

class ResultsFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The "zero" object of a results file: model states and traffic, measured against expected.
nlohmann::json zero_to_json(const ZeroJudgement& zero);

// Writes DIR/<name>.json for every scenario that loaded (a file that did not load has no name
// and gets no results file: bad input never writes anything).
class ResultsDirectoryReporter : public Reporter {
 public:
  explicit ResultsDirectoryReporter(std::filesystem::path directory)
      : directory_(std::move(directory)) {}
  void report_scenario(const ScenarioResult& result) override;
  void report_summary(const std::vector<ScenarioResult>& results, double seconds) override {}

 private:
  std::filesystem::path directory_;
};

}  // namespace trainrepro
