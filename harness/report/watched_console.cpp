#include "harness/report/watched_console.h"

#include <cstdio>

#include "harness/json/json_fields.h"
#include "harness/scenario/precision_config.h"

namespace trainrepro {
namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

std::string number(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

const char* diagnosis_name(const std::optional<DiagnosisKind>& kind) {
  return kind ? spelling_of(*kind, diagnosis_spellings()) : "unexplained";
}

}  // namespace

std::string step_against_golden(const StepJudgement& step) {
  if (step.twin_relative_error < 0.0 || step.gradients.empty()) {
    return step.gradients_match ? "within tolerance" : "differs";
  }
  const TensorComparison& whole = step.gradients.front();
  return std::string(step.gradients_match ? "within " : "beyond ") +
         number("%g", kPrecisionTwinFactor) +
         (step.twin_is_rounded_golden ? "x the RMS error of the golden rounded to bfloat16 ("
                                      : "x the bfloat16 twin's RMS error (") +
         number("%.3g", whole.rms_error) + " vs " + number("%.3g", whole.twin_rms_error) + ")";
}

std::string watched_console_text(const ScenarioResult& result) {
  const WatchedRun& run = *result.watched;
  const WatchedJudgement& judged = run.judgement;
  const std::vector<StepJudgement> no_steps;
  const std::vector<StepJudgement>& steps = result.training ? result.training->steps : no_steps;
  std::string text = watched_outcome(result);
  text.resize(std::max<size_t>(text.size() + 1, 15), ' ');
  text += "watch: " + joined(run.command);
  if (!run.engine.empty()) {
    text += " (" + std::to_string(steps.size()) + " of " + std::to_string(run.steps_wanted) +
            " optimizer steps judged on " + std::to_string(run.ranks) +
            (run.ranks == 1 ? " rank, " : " ranks, ") + run.engine + ")";
  }
  text += "\n";
  if (!run.problem.empty()) text += "    " + run.problem + "\n";
  if (judged.found_something()) {
    text += std::string("    diagnosis: ") + diagnosis_name(judged.diagnosis) + ": " +
            judged.explanation + "\n";
  }
  for (const std::string& finding : judged.findings) text += "    also: " + finding + "\n";
  if (!judged.golden_self_check_failed.empty()) {
    text += "    golden self-check: " + judged.golden_self_check_failed + "\n";
  }
  if (!judged.golden.empty()) text += "    judged by the golden in " + judged.golden + "\n";
  if (!judged.coordinates.empty()) text += "    judged on " + judged.coordinates + "\n";
  if (!judged.not_judged_reason.empty() && run.problem.empty()) {
    text += "    gradients not judged: " + judged.not_judged_reason + "\n";
  }
  for (const StepJudgement& step : steps) {
    text += "    step " + std::to_string(step.step) + ": " + std::to_string(step.micro_batches) +
            " micro-steps x " + std::to_string(run.ranks) + (run.ranks == 1 ? " rank" : " ranks") +
            ", " + std::to_string(step.items) + " items; against the golden: norm ratio " +
            number("%.4g", step.norm_ratio) + ", cosine " + number("%.6f", step.cosine) +
            (step.gradients_match || step.twin_relative_error >= 0.0
                 ? " (" + step_against_golden(step) + ")"
                 : "") +
            "\n";
  }
  if (result.memory) {
    const MemoryJudgement& memory = *result.memory;
    if (!memory.judged && !memory.not_judged_reason.empty()) {
      text += "    " + memory.not_judged_reason + "\n";
    } else if (memory.judged && memory.diagnoses.empty()) {
      text += "    memory: bounded over boundaries " + std::to_string(memory.warmup_steps + 1) +
              "…" + std::to_string(memory.boundaries) + " (live tensors " +
              format_bytes(memory.tensor.bytes_per_step) + "/step, nothing survives a step)\n";
    }
  }
  if (!run.ended.empty()) text += "    watched fewer steps than asked: " + run.ended + "\n";
  return text;
}

}  // namespace trainrepro
