#include "harness/report/watched_result.h"

#include <filesystem>

#include "harness/worker/worker_trace.h"

namespace trainrepro {
namespace {

std::string joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : separator) + word;
  return text;
}

Outcome outcome_of(const WatchReport& report) {
  if (report.outcome == "passed") return Outcome::passed;
  if (report.outcome == "failed") return Outcome::failed;
  return Outcome::error;  // "not-judged" or "error": exit code 3, the infrastructure's
}

// What the run found, in the words a scenario's verdict uses ("diagnosis loss_scaled_twice").
std::string found_of(const WatchReport& report) {
  const WatchJudgement& judged = report.judgement;
  if (!report.problem.empty() && !judged.found_something()) return report.problem;
  if (!judged.found_something()) {
    if (!judged.judged) return "gradients not judged: " + judged.not_judged_reason;
    return "gradients match the golden at all " + std::to_string(judged.windows.size()) +
           " judged optimizer steps; " +
           (judged.memory.judged ? "memory bounded" : judged.memory.not_judged_reason);
  }
  std::vector<std::string> found;
  found.push_back(judged.diagnosis ? "diagnosis " + std::string(spelling_of(*judged.diagnosis,
                                                                            diagnosis_spellings()))
                                   : "gradients differ from the golden, unexplained");
  for (const std::string& finding : judged.findings) found.push_back("also: " + finding);
  return joined(found, "; ");
}

// Each judged window as a scenario's optimizer step against the golden.
std::optional<TrainingJudgement> training_of(const WatchJudgement& judged) {
  if (judged.windows.empty()) return std::nullopt;
  TrainingJudgement training;
  training.gradient_tolerance = default_tolerance(EngineDtype::float32);
  for (const WatchedWindowJudgement& window : judged.windows) {
    StepJudgement step;
    step.step = window.window;
    step.gradients_match = window.gradients_match;
    step.gradients = window.gradients;
    if (!window.gradients_match && !training.first_gradient_mismatch) {
      training.first_gradient_mismatch = window.window;
      Diagnosis diagnosis;
      diagnosis.step = window.window;
      diagnosis.tested = window.tested;
      training.diagnosis = diagnosis;
    }
    if (window.twin_relative_error >= 0.0) training.precision = "bf16";
    training.micro_steps += window.micro_steps;
    training.steps.push_back(std::move(step));
  }
  // Windows are judged before the batch, the scheduler and memory, so a window that mismatched
  // holds the first thing found: the judgement's diagnosis is that window's.
  if (training.diagnosis) {
    training.diagnosis->kind = judged.diagnosis;
    training.diagnosis->explanation = judged.explanation;
  }
  training.not_judged = judged.judged ? "" : judged.not_judged_reason;
  return training;
}

}  // namespace

std::string watched_script(const std::vector<std::string>& command) {
  for (const std::string& word : command) {
    if (word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0) return word;
  }
  return joined(command, " ");
}

ScenarioResult scenario_result_of(const WatchReport& report) {
  const WatchJudgement& judged = report.judgement;
  ScenarioResult result;
  result.file = watched_script(report.command);
  result.name = std::filesystem::path(result.file).filename().string();
  result.description = "watch: " + joined(report.command, " ");
  result.engine = "watched script" + (report.versions.deepspeed.empty()
                                          ? std::string()
                                          : ", " + engine_description(report.versions));
  result.deepspeed_version = report.versions.deepspeed;
  result.torch_version = report.versions.torch;
  result.seconds = report.seconds;
  result.verdict.outcome = outcome_of(report);
  result.verdict.error_source =
      result.verdict.outcome == Outcome::error ? ErrorSource::infrastructure : ErrorSource::none;
  result.verdict.expected = "pass";
  result.verdict.found = found_of(report);
  result.verdict.diagnosis = judged.explanation;
  result.training = training_of(judged);
  if (report.ranks > 0) result.memory = judged.memory;
  return result;
}

}  // namespace trainrepro
