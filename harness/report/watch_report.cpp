#include "harness/report/watch_report.h"

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

std::string window_against_golden(const WatchedWindowJudgement& window) {
  if (window.twin_relative_error < 0.0 || window.gradients.empty()) {
    return window.gradients_match ? "within tolerance" : "differs";
  }
  const TensorComparison& whole = window.gradients.front();
  return std::string(window.gradients_match ? "within " : "beyond ") +
         number("%g", kPrecisionTwinFactor) +
         (window.twin_is_rounded_golden ? "x the RMS error of the golden rounded to bfloat16 ("
                                        : "x the bfloat16 twin's RMS error (") +
         number("%.3g", whole.rms_error) + " vs " + number("%.3g", whole.twin_rms_error) + ")";
}

std::string watch_console_text(const WatchReport& report) {
  const WatchJudgement& judged = report.judgement;
  std::string text = report.outcome;
  text.resize(std::max<size_t>(text.size() + 1, 15), ' ');
  text += "watch: " + joined(report.command);
  if (!report.versions.deepspeed.empty()) {
    text += " (" + std::to_string(judged.windows.size()) + " of " +
            std::to_string(report.windows_wanted) + " optimizer steps judged on " +
            std::to_string(report.ranks) + (report.ranks == 1 ? " rank, " : " ranks, ") +
            engine_description(report.versions) + ")";
  }
  text += "\n";
  if (!report.problem.empty()) text += "    " + report.problem + "\n";
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
  if (!judged.not_judged_reason.empty() && report.problem.empty()) {
    text += "    gradients not judged: " + judged.not_judged_reason + "\n";
  }
  for (const WatchedWindowJudgement& window : judged.windows) {
    text += "    step " + std::to_string(window.window) + ": " +
            std::to_string(window.micro_steps) + " micro-steps x " +
            std::to_string(report.ranks) + (report.ranks == 1 ? " rank" : " ranks") + ", " +
            std::to_string(window.items) + " items; against the golden: norm ratio " +
            number("%.4g", window.norm_ratio) + ", cosine " + number("%.6f", window.cosine) +
            (window.gradients_match || window.twin_relative_error >= 0.0
                 ? " (" + window_against_golden(window) + ")"
                 : "") +
            "\n";
  }
  if (!judged.memory.judged && !judged.memory.not_judged_reason.empty() && report.ranks > 0) {
    text += "    " + judged.memory.not_judged_reason + "\n";
  } else if (judged.memory.judged && judged.memory.diagnoses.empty()) {
    text += "    memory: bounded over boundaries " + std::to_string(judged.memory.warmup_steps + 1) +
            "…" + std::to_string(judged.memory.boundaries) + " (live tensors " +
            format_bytes(judged.memory.tensor.bytes_per_step) + "/step, nothing survives a step)\n";
  }
  if (!report.ended.empty()) text += "    watched fewer steps than asked: " + report.ended + "\n";
  return text;
}

nlohmann::json watch_results_json(const WatchReport& report) {
  const WatchJudgement& judged = report.judgement;
  nlohmann::json windows = nlohmann::json::array();
  for (const WatchedWindowJudgement& window : judged.windows) {
    nlohmann::json tested = nlohmann::json::array();
    for (const HypothesisResult& hypothesis : window.tested) {
      tested.push_back({{"hypothesis", spelling_of(hypothesis.kind, diagnosis_spellings())},
                        {"relative_error", hypothesis.relative_error}});
    }
    nlohmann::json gradients = nlohmann::json::array();
    for (const TensorComparison& comparison : window.gradients) {
      gradients.push_back({{"name", comparison.name},
                           {"within_tolerance", comparison.within_tolerance},
                           {"rms_error", comparison.rms_error},
                           {"twin_rms_error", comparison.twin_rms_error < 0.0
                                                  ? nlohmann::json(nullptr)
                                                  : nlohmann::json(comparison.twin_rms_error)},
                           {"max_abs_error", comparison.max_abs_error},
                           {"norm_ratio", comparison.norm_ratio},
                           {"cosine", comparison.cosine}});
    }
    windows.push_back({{"step", window.window},
                       {"micro_steps", window.micro_steps},
                       {"items", window.items},
                       {"gradients_match", window.gradients_match},
                       {"relative_error", window.relative_error},
                       {"norm_ratio", window.norm_ratio},
                       {"cosine", window.cosine},
                       {"twin_relative_error", window.twin_relative_error < 0.0
                                                   ? nlohmann::json(nullptr)
                                                   : nlohmann::json(window.twin_relative_error)},
                       {"gradients", gradients},
                       {"hypotheses", tested},
                       {"golden_dtype", window.golden_dtype},
                       {"self_check_ratio", window.self_check_ratio < 0.0
                                                ? nlohmann::json(nullptr)
                                                : nlohmann::json(window.self_check_ratio)}});
  }
  return {{"format", "trainrepro-watch-results"},
          {"version", 2},
          {"command", report.command},
          {"outcome", report.outcome},
          {"exit_code", report.exit_code},
          {"command_exit_code", report.command_exit_code},
          {"problem", report.problem},
          {"engine", report.versions.deepspeed.empty()
                         ? nlohmann::json(nullptr)
                         : nlohmann::json(engine_description(report.versions))},
          {"ranks", report.ranks},
          {"steps_wanted", report.windows_wanted},
          {"ended", report.ended},
          {"judged", judged.judged},
          {"not_judged_reason", judged.not_judged_reason},
          {"gradient_accumulation_steps", judged.gradient_accumulation_steps},
          {"effective_batch", judged.effective_batch},
          {"intended_batch", judged.intended_batch},
          {"diagnosis", judged.found_something() ? nlohmann::json(diagnosis_name(judged.diagnosis))
                                                 : nlohmann::json(nullptr)},
          {"explanation", judged.explanation},
          {"findings", judged.findings},
          {"golden", judged.golden},
          {"golden_self_check_failed", judged.golden_self_check_failed},
          {"coordinates", judged.coordinates},
          {"memory",
           {{"judged", judged.memory.judged},
            {"not_judged_reason", judged.memory.not_judged_reason},
            {"diagnoses",
             [&] {
               nlohmann::json names = nlohmann::json::array();
               for (DiagnosisKind kind : judged.memory.diagnoses) {
                 names.push_back(spelling_of(kind, diagnosis_spellings()));
               }
               return names;
             }()},
            {"explanations", judged.memory.explanations},
            {"tensor_bytes_per_step", judged.memory.tensor.bytes_per_step},
            {"host_bytes_per_step", judged.memory.host.bytes_per_step},
            {"autograd_nodes_per_step", judged.memory.autograd_nodes.bytes_per_step},
            {"surviving", judged.memory.surviving}}},
          {"steps", windows}};
}

}  // namespace trainrepro
