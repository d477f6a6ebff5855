// A watched script's run as the plain data a scenario's run is (report/scenario_result.h), so
// that the reporters of scenario results write it: the script is the scenario, each judged
// optimizer step a step against the golden, its memory a scenario's memory judgement, and what
// only a watch knows in ScenarioResult::watched. A watched script expects a pass: a diagnosis is
// a failure; a run that could not be watched or judged an error of the infrastructure (exit 3).
#pragma once
#include <string>
#include <vector>

#include "harness/report/scenario_result.h"
#include "harness/worker/worker_trace.h"

namespace trainrepro {

// The script the command runs (its first word ending ".py"), else the whole command.
std::string watched_script(const std::vector<std::string>& command);

// `training` and `memory` as judge_watched left them; `versions` empty when no rank recorded.
ScenarioResult watched_result(WatchedRun watched, TrainingJudgement training,
                              MemoryJudgement memory, const WorkerVersions& versions,
                              double seconds);

}  // namespace trainrepro
