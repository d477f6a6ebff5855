// A Verdict: what the run found, set against what the scenario expected. Plain data, produced
// by the judging stage and only read by reporters.
#pragma once
#include <optional>
#include <string>

namespace trainrepro {

enum class Outcome {
  passed,          // a regression scenario behaved as the golden
  failed,          // an expectation was not met (and something else happened)
  reproduced,      // a reproduction scenario's named failure was found
  not_reproduced,  // a reproduction scenario's failure was not found
  error,           // the scenario could not be judged (see ErrorSource)
  skipped,         // this machine cannot run it (no GPU, say); not a failure
};

enum class ErrorSource { none, scenario, infrastructure };

struct Verdict {
  Outcome outcome = Outcome::error;
  ErrorSource error_source = ErrorSource::none;
  std::string expected;   // in words: "config error batch_size_mismatch"
  std::string found;      // in words, with the numbers
  std::string diagnosis;  // the explanation and its fix, when one applies
};

const char* outcome_name(Outcome outcome);  // "passed", "not-reproduced", …
std::optional<Outcome> outcome_from_name(const std::string& name);
const char* error_source_name(ErrorSource source);  // "none", "scenario", "infrastructure"
std::optional<ErrorSource> error_source_from_name(const std::string& name);

// The documented exit codes: 0 every expectation met, 1 an expectation not met,
// 2 bad scenario or usage, 3 infrastructure failure; `perf compare` alone: 4 a confirmed
// performance regression.
enum ExitCode : int {
  kExitOk = 0,
  kExitExpectationNotMet = 1,
  kExitBadInput = 2,
  kExitInfrastructure = 3,
  kExitConfirmedRegression = 4,
};

int exit_code_of(const Verdict& verdict);

}  // namespace trainrepro
