// `trainrepro watch --save-scenario S.json` (watch_save_scenario.cpp).
#pragma once
#include <string>
#include <vector>

#include "harness/cli/commands.h"
#include "harness/report/scenario_result.h"
#include "harness/watch/watch_recording.h"

namespace trainrepro {

// Writes the watched run as a scenario with its config, model and samples beside it, through
// `trainrepro new` (its golden included). Returns an exit code; says why when it cannot.
// `result`: the watched run's (its `watched` set).
int save_watched_scenario(const std::vector<RankRecording>& ranks, const ScenarioResult& result,
                          const WatchArgs& args, const std::string& recordings_folder);

}  // namespace trainrepro
