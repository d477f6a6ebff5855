// The results file of one scenario (results/<name>.json): versioned JSON with the resolved plan,
// the verdict and the timings, for HTML reports and performance tracking. Written atomically.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/report/reporter.h"

namespace trainrepro {

constexpr int kResultsFormatVersion = 1;

nlohmann::json result_to_json(const ScenarioResult& result);
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
