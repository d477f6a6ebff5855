// Confirms a suspected regression before it is reported: both builds (the executables recorded in
// the two runs' contexts) measure the suspected benchmarks again side by side, taking turns one
// round of repetitions at a time (turn_taking.h), so a change of the machine's load between the
// two original runs cannot pass for a regression, nor hide one.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/perf/perf_run.h"

namespace trainrepro {

struct ConfirmationOptions {
  // Per build, one round per turn. One repetition's judged step varies 6-13 % even in turns
  // (each repetition builds a new model: its memory layout moves the small MLP's step); 60 a
  // side put the median's error near 2.5 %, so a 10 % change reads as 4 standard errors.
  int repetitions = 60;
  int cpu = -1;  // both builds run on this CPU; -1: the last this process may use
  std::string baseline_build;  // override the executables the contexts name
  std::string current_build;
  std::function<void(const std::string&)> progress;
};

struct Confirmation {
  // Why the builds could not be rerun (a build gone or rebuilt, a rerun failed); empty when
  // they were, and then each build's rerun follows.
  std::string not_possible;
  PerfRun baseline;
  PerfRun current;
  int cpu = -1;  // where both ran
};

// The `perf run` one build reruns: the recorded run's scenarios, engines and planted slowdown,
// the suspected benchmarks' filter, taking turns on `cpu`, written to `out`.
std::vector<std::string> rerun_arguments(const std::string& executable, const PerfRun& recorded,
                                         const std::string& filter, int repetitions, int cpu,
                                         const std::string& out);

Confirmation rerun_interleaved(const PerfRun& baseline, const PerfRun& current,
                               const std::vector<std::string>& benchmarks,
                               const ConfirmationOptions& options);

}  // namespace trainrepro
