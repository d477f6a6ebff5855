// One line per scenario, and for anything not met an Expected / Found / Diagnosis block that
// reads like a good test failure; then one summary line.
#pragma once
#include <ostream>

#include "harness/report/reporter.h"

namespace trainrepro {

class ConsoleReporter : public Reporter {
 public:
  explicit ConsoleReporter(std::ostream& out) : out_(out) {}
  void report_scenario(const ScenarioResult& result) override;
  void report_summary(const std::vector<ScenarioResult>& results, double seconds) override;

 private:
  std::ostream& out_;
};

}  // namespace trainrepro
