#include "harness/verdict/verdict.h"

namespace trainrepro {

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::passed:
      return "passed";
    case Outcome::failed:
      return "failed";
    case Outcome::reproduced:
      return "reproduced";
    case Outcome::not_reproduced:
      return "not-reproduced";
    case Outcome::error:
      return "error";
    case Outcome::skipped:
      return "skipped";
  }
  return "error";
}

int exit_code_of(const Verdict& verdict) {
  switch (verdict.outcome) {
    case Outcome::passed:
    case Outcome::reproduced:
    case Outcome::skipped:
      return kExitOk;
    case Outcome::failed:
    case Outcome::not_reproduced:
      return kExitExpectationNotMet;
    case Outcome::error:
      return verdict.error_source == ErrorSource::scenario ? kExitBadInput : kExitInfrastructure;
  }
  return kExitInfrastructure;
}

}  // namespace trainrepro
