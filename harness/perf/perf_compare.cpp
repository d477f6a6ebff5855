#include "harness/perf/perf_compare.h"

#include <cmath>
#include <map>

#include "harness/perf/figure_values.h"
#include "harness/perf/mann_whitney.h"

namespace trainrepro {
namespace {

FigureComparison compare_values(const std::string& benchmark, const std::string& figure,
                                bool judged, bool larger_worse, const std::vector<double>& before,
                                const std::vector<double>& after, const CompareOptions& options) {
  FigureComparison row;
  row.benchmark = benchmark;
  row.figure = figure;
  row.judged = judged;
  row.baseline_count = before.size();
  row.current_count = after.size();
  if (before.empty() || after.empty()) {
    row.call = ChangeCall::not_comparable;
    return row;
  }
  row.baseline_median = median_of(before);
  row.current_median = median_of(after);
  row.ratio = row.baseline_median != 0.0 ? row.current_median / row.baseline_median
                                         : (row.current_median == 0.0 ? 1.0 : INFINITY);
  const MannWhitneyResult test = mann_whitney_u(before, after);
  row.p_value = test.p_value;
  row.cliffs_delta = test.cliffs_delta;
  if (!judged) return row;
  // Worse (or better) by at least `effect`, in the figure's direction.
  const auto worse_by = [&](double effect) {
    return larger_worse ? row.ratio >= 1.0 + effect : row.ratio <= 1.0 / (1.0 + effect);
  };
  const auto better_by = [&](double effect) {
    return larger_worse ? row.ratio <= 1.0 / (1.0 + effect) : row.ratio >= 1.0 + effect;
  };
  if (row.p_value < options.alpha && worse_by(options.min_effect)) {
    row.call = ChangeCall::regression;
  } else if (row.p_value < options.alpha && better_by(options.min_effect)) {
    row.call = ChangeCall::improvement;
  } else if (row.p_value < options.screen_alpha && worse_by(options.min_effect / 2.0)) {
    row.call = ChangeCall::suspected;
  }
  return row;
}

}  // namespace

namespace {

double coefficient_of_variation(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  double mean = 0.0;
  for (double value : values) mean += value;
  mean /= static_cast<double>(values.size());
  double variance = 0.0;
  for (double value : values) variance += (value - mean) * (value - mean);
  return std::sqrt(variance / static_cast<double>(values.size() - 1)) / mean;
}

}  // namespace

double calibration_noise(const PerfRun& run) {
  std::vector<double> variations;
  for (const PerfBenchmark& benchmark : run.benchmarks) {
    std::vector<double> times;
    for (const PerfRepetition& repetition : benchmark.repetitions) {
      times.push_back(repetition.calibration_seconds);
    }
    if (times.size() > 1) variations.push_back(coefficient_of_variation(times));
  }
  return variations.empty() ? 0.0 : median_of(variations);
}

double judged_step_noise(const PerfRun& run) {
  std::vector<double> variations;
  for (const PerfBenchmark& benchmark : run.benchmarks) {
    if (benchmark.repetitions.size() > 1) {
      variations.push_back(coefficient_of_variation(normalised_step_times(benchmark)));
    }
  }
  return variations.empty() ? 0.0 : median_of(variations);
}

PerfComparison compare_perf_runs(const PerfRun& baseline, const PerfRun& current,
                                 const CompareOptions& options) {
  PerfComparison comparison;
  comparison.baseline_noise = calibration_noise(baseline);
  comparison.current_noise = calibration_noise(current);
  comparison.baseline_judged_noise = judged_step_noise(baseline);
  comparison.current_judged_noise = judged_step_noise(current);
  std::map<std::string, const PerfBenchmark*> in_current;
  for (const PerfBenchmark& benchmark : current.benchmarks) in_current[benchmark.name] = &benchmark;
  std::map<std::string, bool> seen;
  for (const PerfBenchmark& before : baseline.benchmarks) {
    auto found = in_current.find(before.name);
    if (found == in_current.end()) {
      comparison.only_in_baseline.push_back(before.name);
      continue;
    }
    seen[before.name] = true;
    const PerfBenchmark& after = *found->second;
    // The step in units of the calibration kernel: judged. Raw milliseconds: information.
    comparison.rows.push_back(compare_values(before.name, "step_time", true, true,
                                             normalised_step_times(before),
                                             normalised_step_times(after), options));
    for (const auto& [figure, spelling] : perf_figure_spellings()) {
      const std::vector<double> was = figure_values(before, figure);
      const std::vector<double> is = figure_values(after, figure);
      if (was.empty() && is.empty()) continue;
      const bool memory = figure == PerfFigure::peak_tensor_bytes ||
                          figure == PerfFigure::peak_host_bytes ||
                          figure == PerfFigure::peak_cuda_reserved_bytes;
      const std::string label =
          figure == PerfFigure::step_time ? "step_time_ms" : std::string(spelling);
      std::vector<double> was_shown = was;
      std::vector<double> is_shown = is;
      if (figure == PerfFigure::step_time) {
        for (double& value : was_shown) value *= 1e3;
        for (double& value : is_shown) value *= 1e3;
      }
      comparison.rows.push_back(compare_values(before.name, label, memory,
                                               larger_is_worse(figure), was_shown, is_shown,
                                               options));
    }
  }
  for (const PerfBenchmark& after : current.benchmarks) {
    if (!seen.count(after.name)) comparison.only_in_current.push_back(after.name);
  }
  return comparison;
}

const char* change_call_name(ChangeCall call) {
  switch (call) {
    case ChangeCall::unchanged:
      return "unchanged";
    case ChangeCall::suspected:
      return "suspected";
    case ChangeCall::regression:
      return "REGRESSION";
    case ChangeCall::improvement:
      return "improvement";
    case ChangeCall::not_comparable:
      return "not comparable";
  }
  return "?";
}

}  // namespace trainrepro
