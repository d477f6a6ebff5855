// The outcome of a judged run: gradients, then memory, then ZeRO (judge_training.h), each
// finding in its words, against the scenario's expectation.
#include <algorithm>

#include "harness/verdict/judge_config.h"
#include "harness/verdict/judge_memory.h"
#include "harness/verdict/judge_training.h"
#include "harness/verdict/judge_zero.h"
#include "harness/verdict/training_findings.h"

namespace trainrepro {

namespace {

// A run with nothing found: what was compared and measured, so a pass says what it rests on.
std::string describe_matching_run(const TrainingJudgement& training, const MemoryJudgement& memory,
                                  const ZeroJudgement& zero) {
  std::string found = "gradients and parameters match the golden at all " +
                      std::to_string(training.steps.size()) + " compared optimizer steps";
  if (training.precision_twin_factor > 0.0) {
    found += " within " + training_findings::format_number(training.precision_twin_factor) +
             "x the " + training.precision + " precision twin's error (worst RMS error " +
             training_findings::format_number(training.worst_rms_error) + ", twin " +
             training_findings::format_number(training.worst_twin_rms_error) + ")";
  }
  if (training.calibration_skips > 0) {
    found += "; fp16 loss-scale calibration skipped " + std::to_string(training.calibration_skips) +
             " of them (the golden "
             "skipped the same windows), " +
             std::to_string(training.applied_steps) + " applied updates compared";
  }
  found += memory.judged ? "; memory bounded: no window of steps leaves allocations alive "
                           "(tensors " +
                               format_bytes(memory.tensor.bytes_per_step) + "/step, host heap " +
                               format_bytes(memory.host.bytes_per_step) + "/step)"
                         : "; " + memory.not_judged_reason;
  if (zero.judged) {
    found += "; model states " + format_bytes(zero.measured.total()) + " (" +
             std::to_string(zero.model_states_ratio).substr(0, 5) +
             "x the ZeRO formula), collectives (ring model) " +
             format_bytes(zero.ring_bytes_per_step) + "/step (" +
             std::to_string(zero.traffic_ratio).substr(0, 5) + "x)";
  }
  if (!memory.notes.empty()) found += "; " + memory.notes;
  return found;
}

}  // namespace

Verdict judge_run(const Scenario& scenario, const Plan& plan, const Trace& trace,
                  const Golden& golden, TrainingJudgement& training, MemoryJudgement& memory,
                  ZeroJudgement& zero, const Trace* precision_twin) {
  judge_training(scenario, plan, trace, golden, training, precision_twin);
  memory = judge_memory(scenario, plan, trace);
  zero = judge_zero(scenario, plan, trace);
  if (!training.not_judged.empty()) {
    Verdict verdict;
    verdict.outcome = Outcome::error;
    verdict.error_source = ErrorSource::scenario;
    verdict.expected = describe_expectation(scenario.expect);
    verdict.found = scenario.file + ": " + training.not_judged;
    return verdict;
  }

  // What went wrong, each with its words: the gradient story first, then memory.
  std::vector<std::string> found, explanations;
  std::vector<std::optional<DiagnosisKind>> kinds;
  if (training.diagnosis) {
    std::string text = training.mismatch;
    if (training.diagnosis->kind) {
      text += "; diagnosis " +
              std::string(spelling_of(*training.diagnosis->kind, diagnosis_spellings()));
    }
    found.push_back(text);
    explanations.push_back(training.diagnosis->explanation);
    kinds.push_back(training.diagnosis->kind);
  }
  for (size_t i = 0; i < memory.diagnoses.size(); ++i) {
    found.push_back("memory: diagnosis " +
                    std::string(spelling_of(memory.diagnoses[i], diagnosis_spellings())));
    explanations.push_back(memory.explanations[i]);
    kinds.push_back(memory.diagnoses[i]);
  }
  for (size_t i = 0; i < zero.diagnoses.size(); ++i) {
    found.push_back("ZeRO: diagnosis " +
                    std::string(spelling_of(zero.diagnoses[i], diagnosis_spellings())));
    explanations.push_back(zero.explanations[i]);
    kinds.push_back(zero.diagnoses[i]);
  }

  Verdict verdict;
  verdict.expected = describe_expectation(scenario.expect);
  auto join = [](const std::vector<std::string>& parts) {
    std::string text;
    for (const std::string& part : parts) text += (text.empty() ? "" : "; ") + part;
    return text;
  };
  if (kinds.empty()) {
    verdict.found = describe_matching_run(training, memory, zero);
    verdict.outcome = scenario.expect.outcome == ExpectedOutcome::pass ? Outcome::passed
                                                                       : Outcome::not_reproduced;
    return verdict;
  }
  verdict.found = join(found);
  verdict.diagnosis = join(explanations);
  if (!memory.notes.empty()) verdict.found += "; " + memory.notes;
  // Reproduced only when the named diagnosis is found and nothing unexplained beside it: a
  // reproduction that also shows a mismatch no hypothesis explains is not understood.
  const bool expected_found =
      scenario.expect.outcome == ExpectedOutcome::diagnosis &&
      std::find(kinds.begin(), kinds.end(), scenario.expect.diagnosis) != kinds.end();
  const bool unexplained_found = std::find(kinds.begin(), kinds.end(), std::nullopt) != kinds.end();
  // An expected failure without a name is reproduced by any mismatch, explained or not.
  const bool any_failure_expected = scenario.expect.outcome == ExpectedOutcome::failure;
  verdict.outcome = any_failure_expected || (expected_found && !unexplained_found)
                        ? Outcome::reproduced
                        : Outcome::failed;
  return verdict;
}

}  // namespace trainrepro
