#include "harness/report/results_json.h"

#include "harness/files/atomic_write.h"

namespace trainrepro {
namespace {

nlohmann::json optional_to_json(const std::optional<int64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json plan_to_json(const Plan& plan) {
  const ResolvedBatch& batch = plan.batch;
  const OptimizerConfig& optimizer = plan.optimizer;
  return {
      {"train_batch_size", batch.train_batch_size},
      {"train_micro_batch_size_per_gpu", batch.micro_batch_per_gpu},
      {"gradient_accumulation_steps", batch.gradient_accumulation_steps},
      {"world_size", batch.world_size},
      {"given",
       {{"train_batch_size", optional_to_json(batch.given.train_batch_size)},
        {"train_micro_batch_size_per_gpu", optional_to_json(batch.given.micro_batch_per_gpu)},
        {"gradient_accumulation_steps",
         optional_to_json(batch.given.gradient_accumulation_steps)}}},
      {"device", device_name(plan.device)},
      {"dtype", spelling_of(plan.dtype, engine_dtype_spellings())},
      {"precision", precision_name(plan.precision)},
      {"zero_stage", plan.zero_stage},
      {"gradient_clipping", plan.gradient_clipping},
      {"optimizer",
       {{"type", spelling_of(optimizer.kind, optimizer_spellings())},
        {"lr", optimizer.lr},
        {"betas", {optimizer.beta1, optimizer.beta2}},
        {"eps", optimizer.eps},
        {"weight_decay", optimizer.weight_decay},
        {"decoupled_weight_decay", optimizer.decoupled_weight_decay},
        {"momentum", optimizer.momentum}}},
      {"golden", {{"train_batch_size", plan.golden.train_batch_size}, {"steps", plan.golden.steps}}},
  };
}

nlohmann::json comparison_to_json(const TensorComparison& c) {
  return {{"name", c.name},
          {"within_tolerance", c.within_tolerance},
          {"elements", c.elements},
          {"mismatched", c.mismatched},
          {"max_abs_error", c.max_abs_error},
          {"max_rel_error", c.max_rel_error},
          {"worst_index", c.worst_index},
          {"worst_actual", c.worst_actual},
          {"worst_expected", c.worst_expected},
          {"tolerance_used", c.tolerance_used},
          {"norm_ratio", c.norm_ratio},
          {"cosine", c.cosine}};
}

nlohmann::json optional_step(const std::optional<int64_t>& step) {
  return step ? nlohmann::json(*step) : nlohmann::json(nullptr);
}

nlohmann::json training_to_json(const TrainingJudgement& training) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepJudgement& step : training.steps) {
    nlohmann::json gradients = nlohmann::json::array();
    nlohmann::json parameters = nlohmann::json::array();
    for (const auto& c : step.gradients) gradients.push_back(comparison_to_json(c));
    for (const auto& c : step.parameters) parameters.push_back(comparison_to_json(c));
    steps.push_back({{"step", step.step},
                     {"micro_step", step.micro_step},
                     {"loss", step.loss},
                     {"golden_loss", step.golden_loss},
                     {"gradients_match", step.gradients_match},
                     {"parameters_match", step.parameters_match},
                     {"gradients", gradients},
                     {"parameters", parameters}});
  }
  nlohmann::json diagnosis = nullptr;
  if (training.diagnosis) {
    nlohmann::json tested = nlohmann::json::array();
    for (const HypothesisResult& h : training.diagnosis->tested) {
      tested.push_back({{"hypothesis", spelling_of(h.kind, diagnosis_spellings())},
                        {"relative_error", h.relative_error}});
    }
    diagnosis = {{"name", training.diagnosis->kind
                              ? nlohmann::json(spelling_of(*training.diagnosis->kind,
                                                           diagnosis_spellings()))
                              : nlohmann::json(nullptr)},
                 {"step", training.diagnosis->step},
                 {"explanation", training.diagnosis->explanation},
                 {"hypotheses", tested}};
  }
  return {{"golden_file", training.golden_file},
          {"tolerance",
           {{"rtol", training.gradient_tolerance.rtol},
            {"atol", training.gradient_tolerance.atol},
            {"reason", training.tolerance_reason}}},
          {"first_gradient_mismatch", optional_step(training.first_gradient_mismatch)},
          {"first_parameter_mismatch", optional_step(training.first_parameter_mismatch)},
          {"diagnosis", diagnosis},
          {"counters",
           {{"micro_steps", training.counters.micro_steps},
            {"global_steps", training.counters.global_steps},
            {"skipped_steps", training.counters.skipped_steps},
            {"bypass_steps", training.counters.bypass_steps}}},
          {"micro_step_losses", training.micro_step_losses},
          {"steps", steps}};
}

}  // namespace

nlohmann::json result_to_json(const ScenarioResult& result) {
  const Verdict& verdict = result.verdict;
  return {
      {"format", "trainrepro-result"},
      {"format_version", kResultsFormatVersion},
      {"trainrepro_version", TRAINREPRO_VERSION},
      {"torch_version", result.torch_version},
      {"scenario",
       {{"name", result.name},
        {"file", result.file},
        {"description", result.description},
        {"tags", result.tags}}},
      {"outcome", outcome_name(verdict.outcome)},
      {"exit_code", exit_code_of(verdict)},
      {"expected", verdict.expected},
      {"found", verdict.found},
      {"diagnosis", verdict.diagnosis},
      {"warnings", result.warnings},
      {"plan", result.plan ? plan_to_json(*result.plan) : nlohmann::json(nullptr)},
      {"training", result.training ? training_to_json(*result.training) : nlohmann::json(nullptr)},
      {"timings",
       {{"total_seconds", result.seconds},
        {"golden_seconds", result.golden_seconds},
        {"training_seconds", result.training_seconds},
        {"judging_seconds", result.judging_seconds}}},
  };
}

void ResultsDirectoryReporter::report_scenario(const ScenarioResult& result) {
  if (result.name.empty()) return;
  write_file_atomically(directory_ / (result.name + ".json"), result_to_json(result).dump(2) + "\n");
}

}  // namespace trainrepro
