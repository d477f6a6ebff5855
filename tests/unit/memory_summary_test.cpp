// The run's last line counts the scenarios whose memory was judged: `passed` alone cannot say
// whether it was, so the line names the others, by kind, and only the kinds there are.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "harness/report/console_reporter.h"

namespace trainrepro {
namespace {

ScenarioResult trained(bool judged, bool opted_out) {
  ScenarioResult result;
  result.name = "s";
  result.verdict.outcome = Outcome::passed;
  MemoryJudgement memory;
  memory.judged = judged;
  memory.opted_out = opted_out;
  if (!judged && !opted_out) memory.not_judged_reason = "too few boundaries";
  result.memory = memory;
  return result;
}

std::string summary_of(const std::vector<ScenarioResult>& results) {
  std::ostringstream out;
  ConsoleReporter(out).report_summary(results, 1.0);
  return out.str();
}

TEST(MemorySummary, NamesOnlyTheKindsOfUnjudgedScenariosThereAre) {
  ScenarioResult refused;  // a scenario refused before training has no memory to judge
  refused.verdict.outcome = Outcome::error;
  const ScenarioResult judged = trained(true, false);
  const ScenarioResult opted_out = trained(false, true);
  const ScenarioResult too_short = trained(false, false);

  EXPECT_NE(summary_of({judged, judged, refused})
                .find("memory judged in 2 of 2 scenarios that trained\n"),
            std::string::npos);
  EXPECT_NE(summary_of({judged, opted_out})
                .find("memory judged in 1 of 2 scenarios that trained (1 opted out: its line "
                      "says why)\n"),
            std::string::npos);
  EXPECT_NE(summary_of({judged, too_short, too_short})
                .find("memory judged in 1 of 3 scenarios that trained (2 not judged: their "
                      "lines say why)\n"),
            std::string::npos);
  EXPECT_NE(summary_of({opted_out, too_short})
                .find("memory judged in 0 of 2 scenarios that trained (1 opted out, 1 not "
                      "judged: their lines say why)\n"),
            std::string::npos)
      << summary_of({opted_out, too_short});
  EXPECT_EQ(summary_of({refused}).find("memory judged"), std::string::npos);
}

}  // namespace
}  // namespace trainrepro
