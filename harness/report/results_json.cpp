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
      {"timings", {{"total_seconds", result.seconds}}},
  };
}

void ResultsDirectoryReporter::report_scenario(const ScenarioResult& result) {
  if (result.name.empty()) return;
  write_file_atomically(directory_ / (result.name + ".json"), result_to_json(result).dump(2) + "\n");
}

}  // namespace trainrepro
