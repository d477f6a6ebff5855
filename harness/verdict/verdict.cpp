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

std::optional<Outcome> outcome_from_name(const std::string& name) {
  for (Outcome outcome : {Outcome::passed, Outcome::failed, Outcome::reproduced,
                          Outcome::not_reproduced, Outcome::error, Outcome::skipped}) {
    if (name == outcome_name(outcome)) return outcome;
  }
  return std::nullopt;
}

const char* error_source_name(ErrorSource source) {
  switch (source) {
    case ErrorSource::none:
      return "none";
    case ErrorSource::scenario:
      return "scenario";
    case ErrorSource::infrastructure:
      return "infrastructure";
  }
  return "?";
}

std::optional<ErrorSource> error_source_from_name(const std::string& name) {
  for (ErrorSource source :
       {ErrorSource::none, ErrorSource::scenario, ErrorSource::infrastructure}) {
    if (name == error_source_name(source)) return source;
  }
  return std::nullopt;
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
