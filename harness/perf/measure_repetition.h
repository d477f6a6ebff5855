// One measured repetition of a performance scenario: its training loop as `run` trains it (the
// engine, the loop habits, the memory probes), for warm-up plus measured optimizer steps, and the
// figures of the measured steps.
#pragma once
#include "harness/perf/perf_run.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// Throws std::runtime_error when the loop stops before its last step (a loss scale at its
// minimum) and whatever LibTorch throws. The calibration time is left for the caller to fill.
PerfRepetition measure_repetition(const Scenario& scenario, const Plan& plan,
                                  double planted_slowdown);

}  // namespace trainrepro
