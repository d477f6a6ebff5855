#include "harness/perf/engine_ratio.h"

#include "harness/perf/figure_values.h"
#include "harness/perf/mann_whitney.h"

namespace trainrepro {

std::string deepspeed_twin_name(const std::string& benchmark, const std::string& version) {
  return benchmark + " [deepspeed " + version + "]";
}

std::vector<EngineStepRatio> engine_step_ratios(const PerfRun& run) {
  std::vector<EngineStepRatio> ratios;
  for (const PerfBenchmark& twin : run.benchmarks) {
    if (twin.twin_of.empty() || twin.repetitions.empty()) continue;
    for (const PerfBenchmark& reference : run.benchmarks) {
      if (reference.name != twin.twin_of || reference.repetitions.empty()) continue;
      const std::vector<double> reference_times = figure_values(reference, PerfFigure::step_time);
      const std::vector<double> twin_times = figure_values(twin, PerfFigure::step_time);
      if (reference_times.empty() || twin_times.empty()) continue;  // step time not measured
      EngineStepRatio ratio;
      ratio.reference = reference.name;
      ratio.deepspeed = twin.name;
      ratio.ratio = median_of(reference_times) / median_of(twin_times);
      ratio.normalised_ratio =
          median_of(normalised_step_times(reference)) / median_of(normalised_step_times(twin));
      ratios.push_back(ratio);
    }
  }
  return ratios;
}

}  // namespace trainrepro
