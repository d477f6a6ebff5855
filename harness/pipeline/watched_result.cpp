#include "harness/pipeline/watched_result.h"

#include <filesystem>

namespace trainrepro {
namespace {

std::string joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : separator) + word;
  return text;
}

// What the run found, in the words a scenario's verdict uses ("diagnosis loss_scaled_twice").
std::string found_of(const WatchedRun& watched, const TrainingJudgement& training,
                     const MemoryJudgement& memory) {
  const WatchedJudgement& judged = watched.judgement;
  if (!watched.problem.empty() && !judged.found_something()) return watched.problem;
  if (!judged.found_something()) {
    if (!judged.judged) return "gradients not judged: " + judged.not_judged_reason;
    return "gradients match the golden at all " + std::to_string(training.steps.size()) +
           " judged optimizer steps; " +
           (memory.judged ? "memory bounded" : memory.not_judged_reason);
  }
  std::vector<std::string> found;
  found.push_back(judged.diagnosis ? "diagnosis " + std::string(spelling_of(*judged.diagnosis,
                                                                            diagnosis_spellings()))
                                   : "gradients differ from the golden, unexplained");
  for (const std::string& finding : judged.findings) found.push_back("also: " + finding);
  return joined(found, "; ");
}

}  // namespace

std::string watched_script(const std::vector<std::string>& command) {
  for (const std::string& word : command) {
    if (word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0) return word;
  }
  return joined(command, " ");
}

ScenarioResult watched_result(WatchedRun watched, TrainingJudgement training,
                              MemoryJudgement memory, const WorkerVersions& versions,
                              double seconds) {
  const WatchedJudgement& judged = watched.judgement;
  ScenarioResult result;
  result.file = watched_script(watched.command);
  result.name = std::filesystem::path(result.file).filename().string();
  result.description = "watch: " + joined(watched.command, " ");
  watched.engine = versions.deepspeed.empty() ? "" : engine_description(versions);
  result.engine = "watched script" + (watched.engine.empty() ? "" : ", " + watched.engine);
  result.deepspeed_version = versions.deepspeed;
  result.torch_version = versions.torch;
  result.seconds = seconds;
  result.verdict.outcome = judged.found_something()                     ? Outcome::failed
                           : !watched.problem.empty() || !judged.judged ? Outcome::error
                                                                        : Outcome::passed;
  result.verdict.error_source =
      result.verdict.outcome == Outcome::error ? ErrorSource::infrastructure : ErrorSource::none;
  result.verdict.expected = "pass";
  result.verdict.found = found_of(watched, training, memory);
  result.verdict.diagnosis = judged.explanation;
  if (!training.steps.empty()) result.training = std::move(training);
  if (watched.ranks > 0) result.memory = std::move(memory);
  result.watched = std::move(watched);
  return result;
}

}  // namespace trainrepro
