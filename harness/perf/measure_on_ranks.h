// One repetition of a multi-rank benchmark: `mpirun` starts the scenario's ranks as
// `trainrepro rank-measure` processes (one LibTorch thread each, each pinned to a CPU of its own
// while there are enough), they train the scenario together for warm-up plus measured steps,
// and rank 0 writes what it measured, which this process reads back. A fresh set of ranks per
// repetition keeps repetitions interleaved with the other benchmarks of the run, as the
// one-rank ones are; their start-up is outside every measured step.
#pragma once
#include <string>
#include <vector>

#include "harness/perf/perf_plan.h"
#include "harness/perf/perf_run.h"

namespace trainrepro {

// A repetition that takes longer is killed with all its ranks.
constexpr int kRankMeasureTimeoutSeconds = 1800;

// `rank_cpus`: the CPU of each rank, rank 0 first (cpu_pinning.h's rank_cpu_order); with fewer
// CPUs than ranks none is pinned and the ranks share the CPUs as the system schedules them.
// Throws std::runtime_error with the ranks' output when they fail, hang or write nothing; ends
// this process by the signal when a stop signal arrives while the ranks run.
PerfRepetition measure_on_ranks(const PlannedBenchmark& benchmark, double planted_slowdown,
                                const std::vector<int>& rank_cpus);

}  // namespace trainrepro
