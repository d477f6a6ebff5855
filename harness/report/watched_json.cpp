#include "harness/report/watched_json.h"

#include "harness/json/json_fields.h"

namespace trainrepro {
namespace {

nlohmann::json or_null(double value) {
  return value < 0.0 ? nlohmann::json(nullptr) : nlohmann::json(value);
}

nlohmann::json step_to_json(const StepJudgement& step) {
  nlohmann::json tested = nlohmann::json::array();
  for (const HypothesisResult& hypothesis : step.tested) {
    tested.push_back({{"hypothesis", spelling_of(hypothesis.kind, diagnosis_spellings())},
                      {"relative_error", hypothesis.relative_error}});
  }
  nlohmann::json gradients = nlohmann::json::array();
  for (const TensorComparison& comparison : step.gradients) {
    gradients.push_back({{"name", comparison.name},
                         {"within_tolerance", comparison.within_tolerance},
                         {"rms_error", comparison.rms_error},
                         {"twin_rms_error", or_null(comparison.twin_rms_error)},
                         {"max_abs_error", comparison.max_abs_error},
                         {"norm_ratio", comparison.norm_ratio},
                         {"cosine", comparison.cosine}});
  }
  return {{"step", step.step},
          {"micro_steps", step.micro_batches},
          {"items", step.items},
          {"gradients_match", step.gradients_match},
          {"relative_error", step.relative_error},
          {"norm_ratio", step.norm_ratio},
          {"cosine", step.cosine},
          {"twin_relative_error", or_null(step.twin_relative_error)},
          {"gradients", gradients},
          {"hypotheses", tested},
          {"golden_dtype", step.golden_dtype},
          {"self_check_ratio", or_null(step.self_check_ratio)}};
}

nlohmann::json memory_in_brief(const std::optional<MemoryJudgement>& judged) {
  const MemoryJudgement memory = judged.value_or(MemoryJudgement{});
  nlohmann::json names = nlohmann::json::array();
  for (DiagnosisKind kind : memory.diagnoses) {
    names.push_back(spelling_of(kind, diagnosis_spellings()));
  }
  return {{"judged", memory.judged},
          {"not_judged_reason", memory.not_judged_reason},
          {"diagnoses", names},
          {"explanations", memory.explanations},
          {"tensor_bytes_per_step", memory.tensor.bytes_per_step},
          {"host_bytes_per_step", memory.host.bytes_per_step},
          {"autograd_nodes_per_step", memory.autograd_nodes.bytes_per_step},
          {"surviving", memory.surviving}};
}

}  // namespace

nlohmann::json watched_to_json(const ScenarioResult& result) {
  const WatchedRun& run = *result.watched;
  const WatchedJudgement& judged = run.judgement;
  nlohmann::json steps = nlohmann::json::array();
  if (result.training) {
    for (const StepJudgement& step : result.training->steps) steps.push_back(step_to_json(step));
  }
  return {{"format", "trainrepro-watch-results"},
          {"version", 2},
          {"command", run.command},
          {"outcome", watched_outcome(result)},
          {"exit_code", exit_code_of(result.verdict)},
          {"command_exit_code", run.command_exit_code},
          {"problem", run.problem},
          {"engine", run.engine.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.engine)},
          {"ranks", run.ranks},
          {"steps_wanted", run.steps_wanted},
          {"ended", run.ended},
          {"judged", judged.judged},
          {"not_judged_reason", judged.not_judged_reason},
          {"gradient_accumulation_steps", judged.gradient_accumulation_steps},
          {"effective_batch", judged.effective_batch},
          {"intended_batch", judged.intended_batch},
          {"diagnosis", judged.found_something()
                            ? nlohmann::json(judged.diagnosis ? spelling_of(*judged.diagnosis,
                                                                            diagnosis_spellings())
                                                              : "unexplained")
                            : nlohmann::json(nullptr)},
          {"explanation", judged.explanation},
          {"findings", judged.findings},
          {"golden", judged.golden},
          {"golden_self_check_failed", judged.golden_self_check_failed},
          {"coordinates", judged.coordinates},
          {"memory", memory_in_brief(result.memory)},
          {"steps", steps}};
}

}  // namespace trainrepro
