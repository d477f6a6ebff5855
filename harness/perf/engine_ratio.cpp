#include "harness/perf/engine_ratio.h"

#include <optional>

#include "harness/perf/figure_values.h"
#include "harness/perf/mann_whitney.h"

namespace trainrepro {

std::string engine_twin_name(const std::string& benchmark, const std::string& engine) {
  return benchmark + " [" + engine + "]";
}

namespace {

// Both measured with step times: their ratio; otherwise nothing.
std::optional<EngineStepRatio> step_ratio(const PerfBenchmark& numerator,
                                          const PerfBenchmark& denominator) {
  const std::vector<double> over = figure_values(numerator, PerfFigure::step_time);
  const std::vector<double> under = figure_values(denominator, PerfFigure::step_time);
  if (over.empty() || under.empty()) return std::nullopt;  // step time not measured
  EngineStepRatio ratio;
  ratio.numerator = numerator.name;
  ratio.denominator = denominator.name;
  ratio.ratio = median_of(over) / median_of(under);
  ratio.normalised_ratio =
      median_of(normalised_step_times(numerator)) / median_of(normalised_step_times(denominator));
  return ratio;
}

}  // namespace

std::vector<EngineStepRatio> engine_step_ratios(const PerfRun& run) {
  std::vector<EngineStepRatio> ratios;
  for (const PerfBenchmark& twin : run.benchmarks) {
    if (twin.twin_of.empty()) continue;
    for (const PerfBenchmark& reference : run.benchmarks) {
      if (reference.name != twin.twin_of) continue;
      if (auto ratio = step_ratio(reference, twin)) ratios.push_back(*ratio);
    }
  }
  for (size_t first = 0; first < run.benchmarks.size(); ++first) {
    const PerfBenchmark& earlier = run.benchmarks[first];
    if (earlier.twin_of.empty()) continue;
    for (size_t later = first + 1; later < run.benchmarks.size(); ++later) {
      const PerfBenchmark& twin = run.benchmarks[later];
      if (twin.twin_of != earlier.twin_of || twin.loop == earlier.loop) continue;
      if (auto ratio = step_ratio(twin, earlier)) ratios.push_back(*ratio);
    }
  }
  return ratios;
}

}  // namespace trainrepro
