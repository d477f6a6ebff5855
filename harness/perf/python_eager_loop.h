// The hand-written step in Python eager PyTorch, measured beside the engine: what a user's own
// script costs on the same model, batch and optimizer. Runs the torch Python trainrepro was
// built with (TRAINREPRO_TORCH_PYTHON overrides it) on a program passed with -c; the program
// times its own warm-up-excluded steps and prints them, so the interpreter's start is not counted.
#pragma once
#include <optional>
#include <string>

#include "harness/perf/perf_run.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// Why this scenario has no Python twin (only the MLP on feature data, SGD/Adam/AdamW, float32
// or float64, no habits), or nothing when it has one.
std::optional<std::string> python_eager_unsupported(const Scenario& scenario, const Plan& plan);

// Throws std::runtime_error with the interpreter's output when it fails.
PerfRepetition measure_python_eager_loop(const Scenario& scenario, const Plan& plan);

}  // namespace trainrepro
