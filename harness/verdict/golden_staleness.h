// A golden written before a change to a model's initialisation, a data generator or the order
// of parameters no longer starts where the run starts, and every scenario using it would fail
// with "no known cause". Comparing the starting points (initial weights, first samples) says
// what it is and how to regenerate it, before any gradient is judged.
#pragma once
#include <optional>
#include <string>

#include "harness/golden/golden.h"
#include "harness/loop/trace.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// "…: golden is stale: …; regenerate it with: build/trainrepro golden --update …", or nullopt
// when the run starts from the golden's weights and samples.
std::optional<std::string> find_stale_golden(const Scenario& scenario, const Trace& trace,
                                             const Golden& golden);

}  // namespace trainrepro
