#include "harness/report/console_reporter.h"

#include <cstdio>
#include <map>

namespace trainrepro {
namespace {

std::string format_seconds(double seconds) {
  char text[32];
  if (seconds < 1.0) {
    std::snprintf(text, sizeof text, "%.0f ms", seconds * 1000.0);
  } else {
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  }
  return text;
}

std::string padded(std::string text, size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

bool needs_detail(const Verdict& verdict) {
  return verdict.outcome == Outcome::failed || verdict.outcome == Outcome::not_reproduced ||
         verdict.outcome == Outcome::error;
}

}  // namespace

void ConsoleReporter::report_scenario(const ScenarioResult& result) {
  const Verdict& verdict = result.verdict;
  const std::string label = result.name.empty() ? "(not loaded)" : result.name;
  out_ << padded(outcome_name(verdict.outcome), 15) << padded(label, 40) << " " << result.file
       << " (" << format_seconds(result.seconds) << ")\n";

  if (needs_detail(verdict)) {
    if (!verdict.expected.empty()) out_ << "    expected:  " << verdict.expected << "\n";
    out_ << "    found:     " << verdict.found << "\n";
    if (!verdict.diagnosis.empty()) out_ << "    diagnosis: " << verdict.diagnosis << "\n";
  } else if (verdict.outcome == Outcome::reproduced || verdict.outcome == Outcome::skipped) {
    out_ << "    " << verdict.found << "\n";
    if (!verdict.diagnosis.empty()) out_ << "    diagnosis: " << verdict.diagnosis << "\n";
  }
  for (const std::string& warning : result.warnings) out_ << "    warning: " << warning << "\n";
}

void ConsoleReporter::report_summary(const std::vector<ScenarioResult>& results, double seconds) {
  std::map<Outcome, int> counts;
  for (const ScenarioResult& result : results) ++counts[result.verdict.outcome];
  out_ << "\n" << results.size() << (results.size() == 1 ? " scenario: " : " scenarios: ");
  const Outcome order[] = {Outcome::passed,         Outcome::reproduced, Outcome::failed,
                           Outcome::not_reproduced, Outcome::error,      Outcome::skipped};
  bool first = true;
  for (Outcome outcome : order) {
    out_ << (first ? "" : ", ") << counts[outcome] << " " << outcome_name(outcome);
    first = false;
  }
  out_ << " in " << format_seconds(seconds) << "\n";

  switch (exit_code_of(results)) {
    case kExitOk:
      out_ << "every expectation met (exit 0)\n";
      break;
    case kExitExpectationNotMet:
      out_ << "an expectation was not met (exit 1)\n";
      break;
    case kExitBadInput:
      out_ << "a scenario file is invalid (exit 2)\n";
      break;
    default:
      out_ << "infrastructure failure (exit 3)\n";
      break;
  }
}

}  // namespace trainrepro
