// Confirms a suspected regression before it is reported: both builds (the executables recorded in
// the two runs' contexts) measure the suspected benchmarks again, alternating A, B, A, B, so a
// change of the machine's load between the two original runs cannot pass for a regression.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/perf/perf_run.h"

namespace trainrepro {

struct ConfirmationOptions {
  int rounds = 3;           // A/B pairs
  int repetitions = 5;      // per build and round
  std::string baseline_build;  // override the executables the contexts name
  std::string current_build;
  std::function<void(const std::string&)> progress;
};

struct Confirmation {
  // Why the builds could not be rerun (a build gone or rebuilt, a rerun failed); empty when
  // they were, and then the pooled repetitions of each build follow.
  std::string not_possible;
  PerfRun baseline;
  PerfRun current;
};

Confirmation rerun_interleaved(const PerfRun& baseline, const PerfRun& current,
                               const std::vector<std::string>& benchmarks,
                               const ConfirmationOptions& options);

}  // namespace trainrepro
