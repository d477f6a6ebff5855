#include "harness/report/scenario_result.h"

#include <algorithm>

namespace trainrepro {

int exit_code_of(const std::vector<ScenarioResult>& results) {
  int code = kExitOk;
  for (const ScenarioResult& result : results) code = std::max(code, exit_code_of(result.verdict));
  return code;
}

std::string watched_outcome(const ScenarioResult& result) {
  if (result.verdict.outcome == Outcome::passed) return "passed";
  if (result.verdict.outcome == Outcome::failed) return "failed";
  const bool recorded = result.watched && result.watched->ranks > 0;
  return recorded && result.watched->problem.empty() ? "not-judged" : "error";
}

}  // namespace trainrepro
