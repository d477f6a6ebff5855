#include "harness/perf/figure_values.h"

#include <algorithm>

namespace trainrepro {

std::vector<double> figure_values(const PerfBenchmark& benchmark, PerfFigure figure) {
  const auto& measure = benchmark.measure;
  if (!measure.empty() && std::find(measure.begin(), measure.end(), figure) == measure.end()) {
    return {};
  }
  std::vector<double> values;
  for (const PerfRepetition& repetition : benchmark.repetitions) {
    switch (figure) {
      case PerfFigure::step_time:
        values.push_back(repetition.step_seconds);
        break;
      case PerfFigure::samples_per_second:
        values.push_back(repetition.samples_per_second);
        break;
      case PerfFigure::tokens_per_second:
        if (repetition.tokens_per_second) values.push_back(*repetition.tokens_per_second);
        break;
      case PerfFigure::peak_tensor_bytes:
        values.push_back(static_cast<double>(repetition.peak_tensor_bytes));
        break;
      case PerfFigure::peak_host_bytes:
        values.push_back(static_cast<double>(repetition.peak_host_bytes));
        break;
      case PerfFigure::peak_cuda_reserved_bytes:
        if (repetition.peak_cuda_reserved_bytes) {
          values.push_back(static_cast<double>(*repetition.peak_cuda_reserved_bytes));
        }
        break;
      case PerfFigure::mfu:
        if (repetition.mfu) values.push_back(*repetition.mfu);
        break;
    }
  }
  return values;
}

std::vector<double> normalised_step_times(const PerfBenchmark& benchmark) {
  std::vector<double> values;
  for (const PerfRepetition& repetition : benchmark.repetitions) {
    values.push_back(repetition.normalised_step_time());
  }
  return values;
}

bool larger_is_worse(PerfFigure figure) {
  return figure != PerfFigure::samples_per_second && figure != PerfFigure::tokens_per_second &&
         figure != PerfFigure::mfu;
}

}  // namespace trainrepro
