// Judges the part of a scenario that the config alone decides: a DeepSpeed config error that
// was expected (reproduced), expected but absent (not reproduced), or unexpected (failed).
#pragma once
#include <optional>
#include <string>

#include "harness/scenario/plan.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

// "pass", "config error batch_size_mismatch", "diagnosis no_accumulation".
std::string describe_expectation(const Expectation& expectation);

// A Verdict when the config decides the outcome; std::nullopt when training must run.
std::optional<Verdict> judge_config(const Scenario& scenario, const PlanResolution& resolution);

}  // namespace trainrepro
