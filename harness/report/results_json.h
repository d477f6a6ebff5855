// The results file of one scenario (results/<name>.json): versioned JSON with the resolved plan,
// the verdict and the timings, for HTML reports and performance tracking. Written atomically.
#pragma once
#include <filesystem>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/report/reporter.h"
#include "harness/report/run_provenance.h"

namespace trainrepro {

// 2: the verdict's error source, the training's mismatch and divergence in words, and every
// optimizer setting, so a results file reads back into the ScenarioResult that wrote it.
// 3: "provenance" (where the run came from); "diagnosis" is null when there is none, as the
// training's is; files that did not load get a results file too.
constexpr int kResultsFormatVersion = 3;

nlohmann::json result_to_json(const ScenarioResult& result, const RunProvenance& provenance);
// The inverse, for results another process wrote (rank 0 of a multi-rank run, an earlier run for
// a report). `source` names the file for messages; throws ResultsFormatError, located by JSON
// pointer, on a file that is not a results file of this format version. A NaN or infinite number
// (written as null, JSON has neither) reads back as NaN. CUDA snapshots are not in the file.
ScenarioResult result_from_json(const nlohmann::json& json, const std::string& source);
// The "provenance" object of a results file, checked like the rest.
RunProvenance provenance_from_json(const nlohmann::json& json, const std::string& source);

class ResultsFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The "provenance" object of a results file.
nlohmann::json provenance_to_json(const RunProvenance& provenance);
// The "zero" object of a results file: model states and traffic, measured against expected.
nlohmann::json zero_to_json(const ZeroJudgement& zero);

// The name of a scenario's results file, without ".json": its name, or for a file that did not
// load (it has none) "not-loaded--" and the file's path with every "/" written "--".
std::string results_file_stem(const ScenarioResult& result);

// Writes DIR/<results_file_stem>.json for every scenario, loaded or not; the scenario files
// themselves are never touched.
class ResultsDirectoryReporter : public Reporter {
 public:
  ResultsDirectoryReporter(std::filesystem::path directory, RunProvenance provenance)
      : directory_(std::move(directory)), provenance_(std::move(provenance)) {}
  void report_scenario(const ScenarioResult& result) override;
  void report_summary(const std::vector<ScenarioResult>& results, double seconds) override {}

 private:
  std::filesystem::path directory_;
  RunProvenance provenance_;
};

}  // namespace trainrepro
