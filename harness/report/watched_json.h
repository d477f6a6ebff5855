// The "watch" object of a watched run's results file (`trainrepro watch --results`), beside the
// scenario result the file is ("format": "trainrepro-result"): what only a watch knows (the
// command, not-judged and why, each step's norm ratio, cosine, golden and hypotheses, the
// golden's self-check, the findings). Its own "format" is "trainrepro-watch-results", version 2.
#pragma once
#include <nlohmann/json.hpp>

#include "harness/report/scenario_result.h"

namespace trainrepro {

// `result.watched` must be set.
nlohmann::json watched_to_json(const ScenarioResult& result);

}  // namespace trainrepro
