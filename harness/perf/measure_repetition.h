// One measured repetition of a performance scenario: its training loop as `run` trains it (the
// engine, the loop habits, the memory probes), for warm-up plus measured optimizer steps, and the
// figures of the measured steps.
#pragma once
#include "harness/distributed/communicator.h"
#include "harness/perf/perf_run.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// With a communicator, this process is one of the scenario's data-parallel ranks (each calls
// this): the times are this rank's, the rates count the samples and tokens of every rank (what
// the job trains per second, as DeepSpeed's throughput timer reports it), the memory peaks are
// this rank's, and MFU is against the peak of every rank's GPU.
// Throws std::runtime_error when the loop stops before its last step (a loss scale at its
// minimum) and whatever LibTorch throws.
PerfRepetition measure_repetition(const Scenario& scenario, const Plan& plan,
                                  double planted_slowdown, Communicator* communicator = nullptr);

}  // namespace trainrepro
