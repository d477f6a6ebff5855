#include "harness/perf/perf_history.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "harness/perf/benchmark_json.h"
#include "harness/perf/figure_values.h"

namespace trainrepro {
namespace {

// The judged figures and the raw step time (information) of one benchmark across the runs.
BenchmarkHistory history_of(const std::string& name, const PerfHistoryInput& input) {
  BenchmarkHistory history;
  history.name = name;
  history.figures = {{"step time (calibration units, judged)", "calibration units", true, {}, {}},
                     {"step time (ms)", "ms", false, {}, {}},
                     {"peak tensor bytes", "bytes", true, {}, {}},
                     {"peak host heap bytes", "bytes", true, {}, {}}};
  for (const PerfRun& run : input.runs) {
    const PerfBenchmark* found = nullptr;
    for (const PerfBenchmark& benchmark : run.benchmarks) {
      if (benchmark.name == name) found = &benchmark;
    }
    if (!found) {
      for (FigureHistory& figure : history.figures) figure.values.push_back(std::nullopt);
      continue;
    }
    std::vector<double> milliseconds = figure_values(*found, PerfFigure::step_time);
    for (double& value : milliseconds) value *= 1e3;
    const std::vector<std::vector<double>> values = {
        normalised_step_times(*found), milliseconds,
        figure_values(*found, PerfFigure::peak_tensor_bytes),
        figure_values(*found, PerfFigure::peak_host_bytes)};
    for (size_t i = 0; i < history.figures.size(); ++i) {
      if (values[i].empty()) {
        history.figures[i].values.push_back(std::nullopt);
      } else {
        history.figures[i].values.push_back(values[i]);
      }
    }
  }
  for (FigureHistory& figure : history.figures) {
    // Change points among the runs that measured the figure (positive values: ratios).
    std::vector<size_t> present;
    std::vector<std::vector<double>> measured;
    for (size_t i = 0; i < figure.values.size(); ++i) {
      const auto& values = figure.values[i];
      if (values && std::all_of(values->begin(), values->end(), [](double v) { return v > 0.0; })) {
        present.push_back(i);
        measured.push_back(*values);
      }
    }
    try {
      for (ChangePoint change : detect_change_points(measured, input.alpha, input.min_effect)) {
        change.index = present[change.index];
        figure.change_points.push_back(change);
      }
    } catch (const std::invalid_argument&) {
      figure.change_points.clear();  // too short or degenerate: the values alone
    }
  }
  return history;
}

}  // namespace

PerfHistoryInput read_perf_history(const std::string& folder, double alpha, double min_effect) {
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) {
    throw PerfHistoryError(folder + ": expected a folder of perf runs (reports/history/<machine>), "
                           "found " + (std::filesystem::exists(folder, error) ? "a file" : "nothing"));
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path().string());
    }
  }
  PerfHistoryInput input;
  input.folder = folder;
  input.alpha = alpha;
  input.min_effect = min_effect;
  std::vector<std::pair<PerfRun, std::string>> runs;
  for (const std::string& file : files) {
    try {
      runs.push_back({read_perf_run(file), file});
    } catch (const PerfFormatError& problem) {
      input.unreadable.push_back(problem.what());
    }
  }
  // ISO 8601 UTC dates sort as text; the file name breaks ties.
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.context.date, a.second) < std::tie(b.first.context.date, b.second);
  });
  for (auto& [run, file] : runs) {
    input.runs.push_back(std::move(run));
    input.files.push_back(file);
  }
  if (input.runs.empty()) {
    std::string message = folder + ": no perf runs found (*.json from `perf run --out`)";
    for (const std::string& problem : input.unreadable) message += "\n" + problem;
    throw PerfHistoryError(message);
  }
  return input;
}

std::vector<BenchmarkHistory> benchmark_histories(const PerfHistoryInput& input) {
  std::vector<std::string> names;
  for (const PerfRun& run : input.runs) {
    for (const PerfBenchmark& benchmark : run.benchmarks) {
      if (std::find(names.begin(), names.end(), benchmark.name) == names.end()) {
        names.push_back(benchmark.name);
      }
    }
  }
  std::vector<BenchmarkHistory> histories;
  for (const std::string& name : names) histories.push_back(history_of(name, input));
  return histories;
}

}  // namespace trainrepro
