#include "harness/verdict/judge_config.h"

namespace trainrepro {
namespace {

std::string describe_config_error(const ConfigError& error) {
  return "config error " + std::string(spelling_of(error.kind, config_error_spellings())) + ": " +
         error.message;
}

std::string describe_batch(const ResolvedBatch& batch) {
  return "train_batch_size=" + std::to_string(batch.train_batch_size) +
         ", train_micro_batch_size_per_gpu=" + std::to_string(batch.micro_batch_per_gpu) +
         ", gradient_accumulation_steps=" + std::to_string(batch.gradient_accumulation_steps) +
         ", world_size=" + std::to_string(batch.world_size);
}

}  // namespace

std::string describe_expectation(const Expectation& expectation) {
  switch (expectation.outcome) {
    case ExpectedOutcome::pass:
      return "pass";
    case ExpectedOutcome::config_error:
      return "config error " +
             std::string(spelling_of(*expectation.config_error, config_error_spellings()));
    case ExpectedOutcome::diagnosis:
      return "diagnosis " + std::string(spelling_of(*expectation.diagnosis, diagnosis_spellings()));
    case ExpectedOutcome::failure:
      return "a mismatch with the golden (no diagnosis named)";
  }
  return "?";
}

std::optional<Verdict> judge_config(const Scenario& scenario, const PlanResolution& resolution) {
  const Expectation& expect = scenario.expect;
  Verdict verdict;
  verdict.expected = describe_expectation(expect);

  if (const auto* error = std::get_if<ConfigError>(&resolution)) {
    verdict.found = describe_config_error(*error);
    const bool expected_this_error =
        expect.outcome == ExpectedOutcome::config_error && *expect.config_error == error->kind;
    verdict.outcome = expected_this_error ? Outcome::reproduced : Outcome::failed;
    return verdict;
  }

  if (expect.outcome == ExpectedOutcome::config_error) {
    verdict.outcome = Outcome::not_reproduced;
    verdict.found =
        "the config resolves without error: " + describe_batch(std::get<Plan>(resolution).batch);
    return verdict;
  }
  return std::nullopt;
}

}  // namespace trainrepro
