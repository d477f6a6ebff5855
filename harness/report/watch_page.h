// `watch --html FILE`: a watched run's result as one self-contained HTML page (the report's
// stylesheet inlined, no script, no network): the verdict, the diagnosis with its fix, every judged
// step against the golden with the hypotheses tested, the memory verdict, the command's problem.
#pragma once
#include <string>

#include "harness/report/scenario_result.h"

namespace trainrepro {

// `result.watched` must be set.
std::string watch_html_page(const ScenarioResult& result);

}  // namespace trainrepro
