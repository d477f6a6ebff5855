// One figure's values across a benchmark's repetitions, as numbers for statistics: what the
// scaling fit, `perf compare` and the history page all read, so they read it alike.
#pragma once
#include <vector>

#include "harness/perf/perf_run.h"

namespace trainrepro {

// Empty when the figure does not apply (tokens on feature data, CUDA figures on CPU) or the
// scenario's "measure" leaves it out. step_time is in wall seconds.
std::vector<double> figure_values(const PerfBenchmark& benchmark, PerfFigure figure);

// Each repetition's step time over its calibration kernel's: the figure `perf compare` judges.
std::vector<double> normalised_step_times(const PerfBenchmark& benchmark);

// Whether a larger value is worse (times, bytes) or better (rates, MFU).
bool larger_is_worse(PerfFigure figure);

}  // namespace trainrepro
