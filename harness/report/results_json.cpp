#include "harness/report/results_json.h"

#include <cctype>

#include "harness/files/atomic_write.h"
#include "harness/report/watched_json.h"

namespace trainrepro {
namespace {

nlohmann::json optional_to_json(const std::optional<int64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json mixed_precision_to_json(const Plan& plan) {
  if (plan.precision == Precision::fp32) return nullptr;
  const Fp16Config& fp16 = plan.mixed.fp16;
  return {{"loss_scaler", plan.precision != Precision::fp16 ? "none"
                          : fp16.loss_scale > 0.0          ? "static"
                          : plan.mixed.scaler == LossScalerKind::fp16_optimizer
                              ? "FP16_Optimizer (stage 0: no hysteresis)"
                              : "DynamicLossScaler (ZeRO: hysteresis)"},
          {"loss_scale", fp16.loss_scale},
          {"initial_scale_power", fp16.initial_scale_power},
          {"loss_scale_window", fp16.loss_scale_window},
          {"hysteresis", fp16.hysteresis},
          {"consecutive_hysteresis", fp16.consecutive_hysteresis},
          {"min_loss_scale", fp16.min_loss_scale},
          {"accumulate_in_fp32", plan.mixed.accumulate_in_fp32},
          {"check_overflow", plan.mixed.check_overflow}};
}

nlohmann::json plan_to_json(const Plan& plan) {
  const ResolvedBatch& batch = plan.batch;
  const OptimizerConfig& optimizer = plan.optimizer;
  nlohmann::json json = {
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
      {"mixed_precision", mixed_precision_to_json(plan)},
      {"zero_stage", plan.zero_stage},
      {"gradient_clipping", plan.gradient_clipping},
      {"managed_gradient_accumulation", plan.managed_gradient_accumulation},
      {"direct_backward_through_engine", plan.direct_backward_through_engine},
      {"deepspeed_version", plan.deepspeed_version},
      {"optimizer",
       {{"type", spelling_of(optimizer.kind, optimizer_spellings())},
        {"lr", optimizer.lr},
        {"betas", {optimizer.beta1, optimizer.beta2}},
        {"eps", optimizer.eps},
        {"weight_decay", optimizer.weight_decay},
        {"decoupled_weight_decay", optimizer.decoupled_weight_decay},
        {"momentum", optimizer.momentum},
        {"dampening", optimizer.dampening},
        {"nesterov", optimizer.nesterov},
        {"type_as_written", optimizer.type_as_written}}},
      {"golden",
       {{"train_batch_size", plan.golden.train_batch_size}, {"steps", plan.golden.steps}}},
  };
  // The Hugging Face Trainer's loop, only for its runs: its window and who held the boundary.
  if (plan.trainer) {
    json["hf_trainer"] = {
        {"gradient_accumulation_steps", plan.trainer->gradient_accumulation_steps},
        {"transformers_version", plan.trainer->transformers_version},
        {"accelerate_version", plan.trainer->accelerate_version},
        {"explicit_boundary", plan.trainer->explicit_boundary}};
  }
  // The script's own param groups, only when it has some (added after format version 1).
  for (const ParameterGroup& group : optimizer.parameter_groups) {
    nlohmann::json group_json = {{"names", group.names}, {"weight_decay", group.weight_decay}};
    if (group.lr != optimizer.lr) group_json["lr"] = group.lr;  // only when its own
    json["optimizer"]["parameter_groups"].push_back(group_json);
  }
  return json;
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
          {"cosine", c.cosine},
          {"shape_mismatch", c.shape_mismatch},
          {"rms_error", c.rms_error},
          {"twin_rms_error", c.twin_rms_error},
          {"informational", c.informational}};
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
                     {"micro_batches", step.micro_batches},
                     {"items", step.items},
                     {"relative_error", step.relative_error},
                     {"norm_ratio", step.norm_ratio},
                     {"cosine", step.cosine},
                     {"loss", step.loss},
                     {"golden_loss", step.golden_loss},
                     {"skipped", step.skipped},
                     {"loss_scale", step.loss_scale},
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
    diagnosis = {
        {"name", training.diagnosis->kind
                     ? nlohmann::json(spelling_of(*training.diagnosis->kind, diagnosis_spellings()))
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
          {"first_gradient_mismatch", optional_to_json(training.first_gradient_mismatch)},
          {"first_parameter_mismatch", optional_to_json(training.first_parameter_mismatch)},
          {"mismatch", training.mismatch},
          {"divergence", training.divergence ? nlohmann::json(*training.divergence)
                                             : nlohmann::json(nullptr)},
          {"diagnosis", diagnosis},
          {"counters",
           {{"micro_steps", training.counters.micro_steps},
            {"global_steps", training.counters.global_steps},
            {"skipped_steps", training.counters.skipped_steps},
            {"bypass_steps", training.counters.bypass_steps}}},
          {"micro_steps", training.micro_steps},
          {"micro_step_losses", training.micro_step_losses},
          {"precision", training.precision},
          {"precision_twin",
           training.precision_twin_factor > 0.0
               ? nlohmann::json{{"factor", training.precision_twin_factor},
                                {"floor", kPrecisionTwinFloor},
                                {"worst_rms_error", training.worst_rms_error},
                                {"worst_twin_rms_error", training.worst_twin_rms_error}}
               : nlohmann::json(nullptr)},
          {"skipped_steps", training.skipped_steps},
          {"calibration_skips", training.calibration_skips},
          {"applied_steps", training.applied_steps},
          {"loss_scale_log", training.loss_scale_log},
          {"stopped", training.stopped},
          {"steps", steps}};
}

nlohmann::json diagnosis_names(const std::vector<DiagnosisKind>& kinds) {
  nlohmann::json names = nlohmann::json::array();
  for (DiagnosisKind kind : kinds) names.push_back(spelling_of(kind, diagnosis_spellings()));
  return names;
}

nlohmann::json trend_to_json(const GrowthTrend& trend) {
  return {{"bytes_per_step", trend.bytes_per_step},
          {"windows", trend.windows},
          {"grows_in_every_window", trend.grows_in_every_window},
          {"first_bytes", trend.first},
          {"last_bytes", trend.last}};
}

nlohmann::json memory_to_json(const MemoryJudgement& memory,
                              const std::vector<MemorySample>& samples) {
  nlohmann::json curve = nlohmann::json::array();
  for (const MemorySample& s : samples) {
    curve.push_back({{"point", sample_point_name(s.point)},
                     {"micro_step", s.micro_step},
                     {"optimizer_step", s.optimizer_step},
                     {"cpu_tensor_bytes", s.cpu_tensor_bytes},
                     {"cpu_tensor_allocations", s.cpu_tensor_allocations},
                     {"cpu_tensor_peak_bytes", s.cpu_tensor_peak_bytes},
                     {"host_heap_bytes", s.host_heap_bytes},
                     {"resident_bytes", s.resident_bytes},
                     {"autograd_nodes", s.autograd_nodes},
                     {"cuda_allocated_bytes", s.cuda_allocated_bytes},
                     {"cuda_reserved_bytes", s.cuda_reserved_bytes},
                     {"cuda_active_bytes", s.cuda_active_bytes},
                     {"cuda_peak_allocated_bytes", s.cuda_peak_allocated_bytes},
                     {"cuda_alloc_retries", s.cuda_alloc_retries},
                     {"cuda_ooms", s.cuda_ooms}});
  }
  return {{"judged", memory.judged},
          {"not_judged_reason", memory.not_judged_reason},
          {"opted_out", memory.opted_out},
          {"boundaries", memory.boundaries},
          {"warmup_steps", memory.warmup_steps},
          {"window", memory.window},
          {"tensor", trend_to_json(memory.tensor)},
          {"host", trend_to_json(memory.host)},
          {"cuda_reserved", trend_to_json(memory.cuda_reserved)},
          {"autograd_nodes", trend_to_json(memory.autograd_nodes)},
          {"survivors",
           {{"allocations_by_step", memory.survivors.allocations_by_step},
            {"allocations_per_step", memory.survivors.allocations_per_step},
            {"bytes_per_step", memory.survivors.bytes_per_step},
            {"windows", memory.survivors.windows},
            {"in_every_window", memory.survivors.in_every_window}}},
          {"tensor_bookkeeping_bytes", memory.tensor_bookkeeping_bytes},
          {"diagnoses", diagnosis_names(memory.diagnoses)},
          {"explanations", memory.explanations},
          {"surviving", memory.surviving},
          {"peak_tensor_bytes", memory.peak_tensor_bytes},
          {"budget_peak_bytes", optional_to_json(memory.budget_peak_bytes)},
          {"capacity_bytes", memory.capacity_bytes},
          {"out_of_memory_step", optional_to_json(memory.out_of_memory_step)},
          {"evaluation_peak_bytes", memory.evaluation_peak_bytes},
          {"evaluation_peak_bytes_no_grad", memory.evaluation_peak_bytes_no_grad},
          {"notes", memory.notes},
          {"samples", curve}};
}

nlohmann::json model_states_to_json(const ModelStateBytes& bytes) {
  return {{"parameters", bytes.parameters},
          {"gradients", bytes.gradients},
          {"optimizer_states", bytes.optimizer_states},
          {"total", bytes.total()}};
}

}  // namespace

nlohmann::json zero_to_json(const ZeroJudgement& zero) {
  return {{"zero_stage", zero.zero_stage},
          {"world_size", zero.world_size},
          {"gradient_accumulation_steps", zero.gradient_accumulation_steps},
          {"parameter_numel", zero.parameter_numel},
          {"partitioned_numel", zero.partitioned_numel},
          {"bytes_per_parameter",
           {{"parameters", zero.bytes_per_parameter.parameters},
            {"gradients", zero.bytes_per_parameter.gradients},
            {"optimizer_states", zero.bytes_per_parameter.optimizer_states}}},
          {"model_states",
           {{"measured", model_states_to_json(zero.measured)},
            {"expected", model_states_to_json(zero.expected)},
            {"expected_unpadded", model_states_to_json(zero.expected_paper)},
            {"ratio", zero.model_states_ratio}}},
          {"traffic",
           {{"judged", zero.traffic_judged},
            {"counted_as",
             "bytes this rank handed to collectives, (N-1)/N of each buffer (ring model)"},
            {"ring_bytes_per_step", zero.ring_bytes_per_step},
            {"expected_ring_bytes_per_step", zero.expected_ring_bytes_per_step},
            {"ratio", zero.traffic_ratio}}},
          {"not_judged_reason", zero.not_judged_reason},
          {"tensor_bytes_at_boundary", zero.tensor_bytes_at_boundary},
          {"harness_tensor_bytes", zero.harness_tensor_bytes},
          {"tolerance", kZeroFormulaTolerance},
          {"diagnoses", diagnosis_names(zero.diagnoses)},
          {"explanations", zero.explanations}};
}

nlohmann::json provenance_to_json(const RunProvenance& provenance) {
  return {{"started_at", provenance.started_at},
          {"host", provenance.host},
          {"machine", provenance.machine},
          {"git_commit", provenance.git_commit},
          {"command_line", provenance.command_line},
          {"trainrepro_version", provenance.trainrepro_version},
          {"torch_version", provenance.torch_version},
          {"cuda_version", provenance.cuda_version}};
}

nlohmann::json reference_to_json(const std::optional<BugReference>& reference) {
  if (!reference) return nullptr;
  return {{"url", reference->url},
          {"project", reference->project},
          {"affected", reference->affected},
          {"fixed", reference->fixed}};
}

nlohmann::json result_to_json(const ScenarioResult& result, const RunProvenance& provenance) {
  const Verdict& verdict = result.verdict;
  nlohmann::json json = {
      {"format", "trainrepro-result"},
      {"format_version", kResultsFormatVersion},
      {"provenance", provenance_to_json(provenance)},
      {"trainrepro_version", TRAINREPRO_VERSION},
      {"torch_version", result.torch_version},
      {"deepspeed_version", result.deepspeed_version},
      {"engine", result.engine},
      {"release_expectation", result.release_expectation.empty()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(result.release_expectation)},
      {"scenario",
       {{"name", result.name},
        {"file", result.file},
        {"description", result.description},
        {"tags", result.tags},
        {"reference", reference_to_json(result.reference)}}},
      {"outcome", outcome_name(verdict.outcome)},
      {"exit_code", exit_code_of(verdict)},
      {"error_source", error_source_name(verdict.error_source)},
      {"expected", verdict.expected},
      {"found", verdict.found},
      {"diagnosis",
       verdict.diagnosis.empty() ? nlohmann::json(nullptr) : nlohmann::json(verdict.diagnosis)},
      {"warnings", result.warnings},
      {"plan", result.plan ? plan_to_json(*result.plan) : nlohmann::json(nullptr)},
      {"training", result.training ? training_to_json(*result.training) : nlohmann::json(nullptr)},
      {"memory", result.memory ? memory_to_json(*result.memory, result.memory_samples)
                               : nlohmann::json(nullptr)},
      {"zero", result.zero ? zero_to_json(*result.zero) : nlohmann::json(nullptr)},
      {"timings",
       {{"total_seconds", result.seconds},
        {"golden_seconds", result.golden_seconds},
        {"training_seconds", result.training_seconds},
        {"judging_seconds", result.judging_seconds}}},
  };
  // A watched run (`trainrepro watch`): what only a watch knows.
  if (result.watched) json["watch"] = watched_to_json(result);
  return json;
}

std::string results_file_stem(const ScenarioResult& result) {
  if (!result.name.empty()) return result.name;
  std::string stem = "not-loaded--";
  std::string file = result.file;
  if (file.size() > 5 && file.compare(file.size() - 5, 5, ".json") == 0) file.resize(file.size() - 5);
  for (char c : file) {
    const bool plain = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    stem += c == '/' ? std::string("--") : std::string(1, plain ? c : '_');
  }
  // File names stop at 255 bytes; ".json" and the atomic write's temporary suffix need room.
  if (stem.size() > 200) stem.resize(200);
  return stem;
}

void ResultsDirectoryReporter::report_scenario(const ScenarioResult& result) {
  // A path is bytes on Linux: one that is not UTF-8 is written with U+FFFD (JSON is UTF-8)
  // rather than losing the whole results file.
  write_file_atomically(directory_ / (results_file_stem(result) + ".json"),
                        result_to_json(result, provenance_)
                                .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                            "\n");
  // CUDA memory snapshots only matter once a leak is found; then both go next to the results.
  bool leak = false;
  if (result.memory) {
    for (DiagnosisKind kind : result.memory->diagnoses) {
      leak = leak || kind != DiagnosisKind::memory_over_budget;
    }
  }
  if (!leak) return;
  for (const MemorySnapshot& snapshot : result.memory_snapshots) {
    write_file_atomically(directory_ / (result.name + ".memory-snapshot-step" +
                                        std::to_string(snapshot.optimizer_step) + ".pickle"),
                          snapshot.pickle);
  }
}

}  // namespace trainrepro
