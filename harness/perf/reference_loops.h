// The loops measured beside the harness's own (PerfLoop): the reference engine alone, with and
// without memory probes, and a hand-written LibTorch loop doing the same work. Each runs the
// scenario's model, data and optimizer on batches made before timing starts, as
// bench/engine_overhead_bench.cpp does, so the ratios say what the engine and probes cost.
#pragma once
#include "harness/perf/perf_run.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// Step time, CPU time and samples/s (tokens/s for token data); memory figures are not measured.
PerfRepetition measure_reference_loop(const Scenario& scenario, const Plan& plan, PerfLoop loop);

}  // namespace trainrepro
