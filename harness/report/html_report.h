// `trainrepro report`: one self-contained HTML page from results files. This side only selects
// and samples what the page shows (reports/DATA.md, the data object); the page's own script
// (reports/report.js, charts.js) draws it. Reporters read results; they never run anything.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/perf/perf_history.h"
#include "harness/report/run_provenance.h"
#include "harness/report/scenario_result.h"

namespace trainrepro {

struct ReportInput {
  std::vector<std::string> sources;        // the folders and files named by the user
  std::vector<ScenarioResult> results;
  std::vector<RunProvenance> provenances;  // of each result, same order
  struct Unreadable {
    std::string file;
    std::string message;
  };
  std::vector<Unreadable> unreadable;  // files skipped, each with why
  // `report --perf-history FOLDER`: a machine's performance history, drawn in its own section.
  std::optional<PerfHistoryInput> performance;
};

// Curves in the page have at most this many points (the first, the last and a failing step
// always among them): a page of 500 scenarios stays a few MB.
constexpr size_t kMostPointsPerCurve = 240;

// The data object of reports/DATA.md.
nlohmann::json report_data(const ReportInput& input);

// The page: reports/template.html with its assets and the data inlined. Throws
// std::runtime_error when the compiled-in template lacks a placeholder.
std::string html_report(const ReportInput& input);

}  // namespace trainrepro
