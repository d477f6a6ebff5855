// A watched script's run as the plain data a scenario's run is (scenario_result.h), so that the
// reporters of scenario results write it too: the script is the scenario, each judged optimizer
// step a step against the golden, its memory a scenario's memory judgement. A watched script
// expects a pass: a diagnosis is a failure, a run that could not be judged an error.
#pragma once
#include "harness/report/scenario_result.h"
#include "harness/report/watch_report.h"

namespace trainrepro {

// The script the command runs (its first word ending ".py"), else the whole command.
std::string watched_script(const std::vector<std::string>& command);

ScenarioResult scenario_result_of(const WatchReport& report);

}  // namespace trainrepro
