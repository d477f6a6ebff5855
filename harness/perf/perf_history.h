// A machine's performance history as plain data: the perf runs of a folder
// (reports/history/<machine>/*.json) in time order, and per benchmark each judged figure's values
// over the runs with its change points (change_points.h). The history page (`perf history`) and
// the report's "Performance history" section (`report --perf-history`) both draw this.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/perf/change_points.h"
#include "harness/perf/perf_run.h"

namespace trainrepro {

struct PerfHistoryInput {
  std::string folder;
  std::vector<PerfRun> runs;  // in time order (context.date, then file name)
  std::vector<std::string> files;
  std::vector<std::string> unreadable;  // "FILE: why": skipped, and listed where it is drawn
  double alpha = 0.01;
  double min_effect = 0.05;
};

// A folder that is not one, or holds no readable run.
class PerfHistoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads every *.json of `folder`; throws PerfHistoryError (message starting with the folder)
// when it is not a folder or no run in it can be read.
PerfHistoryInput read_perf_history(const std::string& folder, double alpha, double min_effect);

struct FigureHistory {
  std::string title;  // "step time (calibration units, judged)"
  std::string unit;   // "calibration units", "ms", "bytes"
  bool judged = true;
  // Per run, that run's repetitions; absent where the benchmark or figure was not measured.
  std::vector<std::optional<std::vector<double>>> values;
  // Indices into the runs (not into the measured ones).
  std::vector<ChangePoint> change_points;
};

struct BenchmarkHistory {
  std::string name;
  std::vector<FigureHistory> figures;
};

// Every benchmark of the runs, in order of first appearance.
std::vector<BenchmarkHistory> benchmark_histories(const PerfHistoryInput& input);

}  // namespace trainrepro
