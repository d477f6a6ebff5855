// Warnings for loop habits that cannot show in what is compared: an evaluation that calls
// backward() every 5 steps changes step 5's gradients, which a 3-step comparison never sees, so
// the scenario would pass silently. Said before the run, from the plan.
#pragma once
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace trainrepro {

// "file:/loop/evaluation/every: …" for each habit whose first effect lies beyond the compared
// optimizer steps (golden.steps).
std::vector<std::string> habits_beyond_compared_steps(const Scenario& scenario);

}  // namespace trainrepro
