// The reporter interface. A run feeds every reporter each scenario result as it completes and
// the whole list at the end; a console reporter and a results-file reporter run side by side.
#pragma once
#include <vector>

#include "harness/report/scenario_result.h"

namespace trainrepro {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void report_scenario(const ScenarioResult& result) = 0;
  virtual void report_summary(const std::vector<ScenarioResult>& results, double seconds) = 0;
};

}  // namespace trainrepro
