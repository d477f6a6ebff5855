// The console lines of a watched run (`trainrepro watch`), which ConsoleReporter prints for a
// result that has ScenarioResult::watched: "failed      watch: torchrun … train.py (2 of 4
// optimizer steps judged on 2 ranks, deepspeed 0.19.8 …)" and the indented lines after it.
#pragma once
#include <string>

#include "harness/report/scenario_result.h"

namespace trainrepro {

// How a judged step stood against the golden, in words: "within tolerance" or "differs"
// (float32); a bfloat16 model's with its RMS error and its precision twin's.
std::string step_against_golden(const StepJudgement& step);

std::string watched_console_text(const ScenarioResult& result);

}  // namespace trainrepro
