#include "harness/report/scenario_result.h"

#include <algorithm>

namespace trainrepro {

int exit_code_of(const std::vector<ScenarioResult>& results) {
  int code = kExitOk;
  for (const ScenarioResult& result : results) code = std::max(code, exit_code_of(result.verdict));
  return code;
}

}  // namespace trainrepro
