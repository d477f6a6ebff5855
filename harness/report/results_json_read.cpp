// Reads a results file back into the ScenarioResult that wrote it: the parent of a multi-rank
// run reports what rank 0 judged through the same plain type as a one-rank run, and reports of
// earlier runs read the same files. Every error names the file and the JSON pointer.
#include <cmath>
#include <limits>

#include "harness/report/results_json.h"
#include "harness/json/json_fields.h"

namespace trainrepro {
namespace {

// One JSON object of the results file and where it sits, with typed reads that fail loudly.
class ResultsObject {
 public:
  ResultsObject(const nlohmann::json& value, const std::string& source, std::string pointer)
      : value_(value), source_(source), pointer_(std::move(pointer)) {
    if (!value_.is_object()) fail("", "an object", value_);
  }

  const nlohmann::json& at(const std::string& key) const {
    const auto found = value_.find(key);
    if (found == value_.end()) {
      throw ResultsFormatError(source_ + ":" + pointer_to(key) + ": missing (is this a trainrepro results file of format version " +
                               std::to_string(kResultsFormatVersion) + "?)");
    }
    return *found;
  }
  bool is_null(const std::string& key) const { return at(key).is_null(); }
  // Keys added after format version 1 was fixed (mixed precision): absent in older files.
  bool has(const std::string& key) const { return value_.contains(key); }
  ResultsObject object(const std::string& key) const {
    return ResultsObject(at(key), source_, pointer_to(key));
  }
  std::string text(const std::string& key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_string()) fail(key, "a string", value);
    return value.get<std::string>();
  }
  int64_t integer(const std::string& key) const { return integer_of(at(key), key); }
  std::optional<int64_t> optional_integer(const std::string& key) const {
    if (is_null(key)) return std::nullopt;
    return integer(key);
  }
  // null is how a NaN or an infinity was written.
  double number(const std::string& key) const { return number_of(at(key), key); }
  bool flag(const std::string& key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_boolean()) fail(key, "true or false", value);
    return value.get<bool>();
  }
  const nlohmann::json& array(const std::string& key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_array()) fail(key, "an array", value);
    return value;
  }
  std::vector<std::string> texts(const std::string& key) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < array(key).size(); ++i) {
      const nlohmann::json& item = array(key)[i];
      if (!item.is_string()) fail(key, "a string", item, static_cast<int64_t>(i));
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  std::vector<int64_t> integers(const std::string& key) const {
    std::vector<int64_t> out;
    for (size_t i = 0; i < array(key).size(); ++i) {
      out.push_back(integer_of(array(key)[i], key, static_cast<int64_t>(i)));
    }
    return out;
  }
  std::vector<double> numbers(const std::string& key) const {
    std::vector<double> out;
    for (size_t i = 0; i < array(key).size(); ++i) {
      out.push_back(number_of(array(key)[i], key, static_cast<int64_t>(i)));
    }
    return out;
  }
  // The objects of an array, each with its pointer.
  std::vector<ResultsObject> objects(const std::string& key) const {
    std::vector<ResultsObject> out;
    for (size_t i = 0; i < array(key).size(); ++i) {
      out.emplace_back(array(key)[i], source_, pointer_to(key) + "/" + std::to_string(i));
    }
    return out;
  }
  template <typename Enum>
  Enum spelled(const std::string& key, const EnumSpellings<Enum>& spellings) const {
    const std::string spelling = text(key);
    std::string allowed;
    for (const auto& [value, name] : spellings) {
      if (spelling == name) return value;
      allowed += (allowed.empty() ? "\"" : ", \"") + std::string(name) + "\"";
    }
    fail(key, "one of " + allowed, at(key));
  }

  // `index` >= 0 locates an element of the array at `key`.
  [[noreturn]] void fail(const std::string& key, const std::string& expected,
                         const nlohmann::json& found, int64_t index = -1) const {
    std::string pointer = key.empty() ? pointer_ : pointer_to(key);
    if (index >= 0) pointer += "/" + std::to_string(index);
    throw ResultsFormatError(source_ + (pointer.empty() ? "" : ":" + pointer) + ": expected " +
                             expected + ", found " + describe_json_value(found));
  }

 private:
  std::string pointer_to(const std::string& key) const {
    return pointer_ + "/" + escape_pointer_token(key);
  }
  int64_t integer_of(const nlohmann::json& value, const std::string& key,
                     int64_t index = -1) const {
    if (!value.is_number_integer()) fail(key, "an integer", value, index);
    return value.get<int64_t>();
  }
  double number_of(const nlohmann::json& value, const std::string& key,
                   int64_t index = -1) const {
    if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!value.is_number()) fail(key, "a number", value, index);
    return value.get<double>();
  }

  const nlohmann::json& value_;
  const std::string& source_;
  std::string pointer_;
};

template <typename Enum>
EnumSpellings<Enum> spellings_from_names(std::initializer_list<Enum> values,
                                         const char* (*name_of)(Enum)) {
  EnumSpellings<Enum> spellings;
  for (Enum value : values) spellings.emplace_back(value, name_of(value));
  return spellings;
}

BatchInputs given_batch_from(const ResultsObject& given) {
  return {given.optional_integer("train_batch_size"),
          given.optional_integer("train_micro_batch_size_per_gpu"),
          given.optional_integer("gradient_accumulation_steps")};
}

Plan plan_from(const ResultsObject& json) {
  Plan plan;
  plan.batch.train_batch_size = json.integer("train_batch_size");
  plan.batch.micro_batch_per_gpu = json.integer("train_micro_batch_size_per_gpu");
  plan.batch.gradient_accumulation_steps = json.integer("gradient_accumulation_steps");
  plan.batch.world_size = json.integer("world_size");
  plan.batch.given = given_batch_from(json.object("given"));
  plan.device = json.spelled("device", spellings_from_names({Device::cpu, Device::cuda},
                                                            device_name));
  plan.dtype = json.spelled("dtype", engine_dtype_spellings());
  plan.precision = json.spelled(
      "precision",
      spellings_from_names({Precision::fp32, Precision::fp16, Precision::bf16}, precision_name));
  if (json.has("mixed_precision") && !json.is_null("mixed_precision")) {
    const ResultsObject mixed = json.object("mixed_precision");
    Fp16Config& fp16 = plan.mixed.fp16;
    fp16.loss_scale = mixed.number("loss_scale");
    fp16.initial_scale_power = mixed.integer("initial_scale_power");
    fp16.loss_scale_window = mixed.integer("loss_scale_window");
    fp16.hysteresis = mixed.integer("hysteresis");
    fp16.consecutive_hysteresis = mixed.flag("consecutive_hysteresis");
    fp16.min_loss_scale = mixed.number("min_loss_scale");
    plan.mixed.accumulate_in_fp32 = mixed.flag("accumulate_in_fp32");
    plan.mixed.check_overflow = mixed.flag("check_overflow");
    plan.mixed.scaler = mixed.text("loss_scaler").rfind("DynamicLossScaler", 0) == 0
                            ? LossScalerKind::zero_dynamic
                            : LossScalerKind::fp16_optimizer;
  }
  plan.zero_stage = json.integer("zero_stage");
  plan.gradient_clipping = json.number("gradient_clipping");
  plan.managed_gradient_accumulation = json.flag("managed_gradient_accumulation");
  plan.direct_backward_through_engine = json.flag("direct_backward_through_engine");
  plan.deepspeed_version = json.text("deepspeed_version");

  const ResultsObject optimizer_json = json.object("optimizer");
  OptimizerConfig& optimizer = plan.optimizer;
  optimizer.kind = optimizer_json.spelled("type", optimizer_spellings());
  optimizer.lr = optimizer_json.number("lr");
  const std::vector<double> betas = optimizer_json.numbers("betas");
  if (betas.size() != 2) {
    optimizer_json.fail("betas", "an array of 2 numbers", optimizer_json.at("betas"));
  }
  optimizer.beta1 = betas[0];
  optimizer.beta2 = betas[1];
  optimizer.eps = optimizer_json.number("eps");
  optimizer.weight_decay = optimizer_json.number("weight_decay");
  optimizer.decoupled_weight_decay = optimizer_json.flag("decoupled_weight_decay");
  optimizer.momentum = optimizer_json.number("momentum");
  optimizer.dampening = optimizer_json.number("dampening");
  optimizer.nesterov = optimizer_json.flag("nesterov");
  optimizer.type_as_written = optimizer_json.text("type_as_written");
  if (optimizer_json.has("parameter_groups")) {
    for (const ResultsObject& group : optimizer_json.objects("parameter_groups")) {
      optimizer.parameter_groups.push_back(
          {group.texts("names"), group.number("weight_decay"),
           group.has("lr") ? group.number("lr") : optimizer.lr});
    }
  }

  if (json.has("hf_trainer")) {
    const ResultsObject trainer = json.object("hf_trainer");
    plan.trainer = TrainerLoopSpec{trainer.integer("gradient_accumulation_steps"),
                                   trainer.text("transformers_version"),
                                   trainer.text("accelerate_version"),
                                   trainer.flag("explicit_boundary")};
  }

  const ResultsObject golden = json.object("golden");
  plan.golden.train_batch_size = golden.integer("train_batch_size");
  plan.golden.steps = golden.integer("steps");
  return plan;
}

TensorComparison comparison_from(const ResultsObject& json) {
  TensorComparison c;
  c.name = json.text("name");
  c.within_tolerance = json.flag("within_tolerance");
  c.elements = json.integer("elements");
  c.mismatched = json.integer("mismatched");
  c.max_abs_error = json.number("max_abs_error");
  c.max_rel_error = json.number("max_rel_error");
  c.worst_index = json.integers("worst_index");
  c.worst_actual = json.number("worst_actual");
  c.worst_expected = json.number("worst_expected");
  c.tolerance_used = json.number("tolerance_used");
  c.norm_ratio = json.number("norm_ratio");
  c.cosine = json.number("cosine");
  c.shape_mismatch = json.text("shape_mismatch");
  if (json.has("rms_error")) c.rms_error = json.number("rms_error");
  if (json.has("twin_rms_error")) c.twin_rms_error = json.number("twin_rms_error");
  if (json.has("informational")) c.informational = json.flag("informational");
  return c;
}

Diagnosis diagnosis_from(const ResultsObject& json) {
  Diagnosis diagnosis;
  if (!json.is_null("name")) diagnosis.kind = json.spelled("name", diagnosis_spellings());
  diagnosis.step = json.integer("step");
  diagnosis.explanation = json.text("explanation");
  for (const ResultsObject& tested : json.objects("hypotheses")) {
    diagnosis.tested.push_back({tested.spelled("hypothesis", diagnosis_spellings()),
                                tested.number("relative_error")});
  }
  return diagnosis;
}

TrainingJudgement training_from(const ResultsObject& json) {
  TrainingJudgement training;
  training.golden_file = json.text("golden_file");
  const ResultsObject tolerance = json.object("tolerance");
  training.gradient_tolerance = {tolerance.number("rtol"), tolerance.number("atol")};
  training.tolerance_reason = tolerance.text("reason");
  training.first_gradient_mismatch = json.optional_integer("first_gradient_mismatch");
  training.first_parameter_mismatch = json.optional_integer("first_parameter_mismatch");
  training.mismatch = json.text("mismatch");
  if (!json.is_null("divergence")) training.divergence = json.text("divergence");
  if (!json.is_null("diagnosis")) training.diagnosis = diagnosis_from(json.object("diagnosis"));
  const ResultsObject counters = json.object("counters");
  training.counters.micro_steps = counters.integer("micro_steps");
  training.counters.global_steps = counters.integer("global_steps");
  training.counters.skipped_steps = counters.integer("skipped_steps");
  training.counters.bypass_steps = counters.integer("bypass_steps");
  training.micro_steps = json.integer("micro_steps");
  training.micro_step_losses = json.numbers("micro_step_losses");
  if (json.has("precision")) training.precision = json.text("precision");
  if (json.has("precision_twin") && !json.is_null("precision_twin")) {
    const ResultsObject twin = json.object("precision_twin");
    training.precision_twin_factor = twin.number("factor");
    training.worst_rms_error = twin.number("worst_rms_error");
    training.worst_twin_rms_error = twin.number("worst_twin_rms_error");
  }
  if (json.has("skipped_steps")) training.skipped_steps = json.integers("skipped_steps");
  if (json.has("calibration_skips")) training.calibration_skips = json.integer("calibration_skips");
  if (json.has("applied_steps")) training.applied_steps = json.integer("applied_steps");
  if (json.has("loss_scale_log")) training.loss_scale_log = json.texts("loss_scale_log");
  if (json.has("stopped")) training.stopped = json.text("stopped");
  for (const ResultsObject& step_json : json.objects("steps")) {
    StepJudgement step;
    step.step = step_json.integer("step");
    step.micro_step = step_json.integer("micro_step");
    step.loss = step_json.number("loss");
    step.golden_loss = step_json.number("golden_loss");
    if (step_json.has("skipped")) step.skipped = step_json.flag("skipped");
    if (step_json.has("loss_scale")) step.loss_scale = step_json.number("loss_scale");
    // Format 3 files written before 2026-12-06 lack the whole model's comparison.
    if (step_json.has("micro_batches")) step.micro_batches = step_json.integer("micro_batches");
    if (step_json.has("items")) step.items = step_json.integer("items");
    if (step_json.has("relative_error")) step.relative_error = step_json.number("relative_error");
    if (step_json.has("norm_ratio")) step.norm_ratio = step_json.number("norm_ratio");
    if (step_json.has("cosine")) step.cosine = step_json.number("cosine");
    step.gradients_match = step_json.flag("gradients_match");
    step.parameters_match = step_json.flag("parameters_match");
    for (const ResultsObject& c : step_json.objects("gradients")) {
      step.gradients.push_back(comparison_from(c));
    }
    for (const ResultsObject& c : step_json.objects("parameters")) {
      step.parameters.push_back(comparison_from(c));
    }
    training.steps.push_back(std::move(step));
  }
  return training;
}

std::vector<DiagnosisKind> diagnosis_kinds_from(const ResultsObject& json, const std::string& key) {
  std::vector<DiagnosisKind> kinds;
  const std::vector<std::string> names = json.texts(key);
  for (size_t i = 0; i < names.size(); ++i) {
    bool known = false;
    for (const auto& [kind, name] : diagnosis_spellings()) {
      if (names[i] == name) {
        kinds.push_back(kind);
        known = true;
      }
    }
    if (!known) json.fail(key, "the name of a diagnosis", names[i], static_cast<int64_t>(i));
  }
  return kinds;
}

GrowthTrend trend_from(const ResultsObject& json) {
  GrowthTrend trend;
  trend.bytes_per_step = json.number("bytes_per_step");
  trend.windows = json.integer("windows");
  trend.grows_in_every_window = json.flag("grows_in_every_window");
  trend.first = json.number("first_bytes");
  trend.last = json.number("last_bytes");
  return trend;
}

MemorySample sample_from(const ResultsObject& json) {
  MemorySample s;
  s.point = json.spelled(
      "point", spellings_from_names({SamplePoint::micro_step, SamplePoint::boundary,
                                     SamplePoint::before_evaluation, SamplePoint::after_evaluation},
                                    sample_point_name));
  s.micro_step = json.integer("micro_step");
  s.optimizer_step = json.integer("optimizer_step");
  s.cpu_tensor_bytes = json.integer("cpu_tensor_bytes");
  s.cpu_tensor_allocations = json.integer("cpu_tensor_allocations");
  s.cpu_tensor_peak_bytes = json.integer("cpu_tensor_peak_bytes");
  s.host_heap_bytes = json.integer("host_heap_bytes");
  s.resident_bytes = json.integer("resident_bytes");
  if (json.has("autograd_nodes")) s.autograd_nodes = json.integer("autograd_nodes");
  s.cuda_allocated_bytes = json.integer("cuda_allocated_bytes");
  s.cuda_reserved_bytes = json.integer("cuda_reserved_bytes");
  s.cuda_active_bytes = json.integer("cuda_active_bytes");
  s.cuda_peak_allocated_bytes = json.integer("cuda_peak_allocated_bytes");
  s.cuda_alloc_retries = json.integer("cuda_alloc_retries");
  s.cuda_ooms = json.integer("cuda_ooms");
  return s;
}

MemoryJudgement memory_from(const ResultsObject& json) {
  MemoryJudgement memory;
  memory.judged = json.flag("judged");
  memory.not_judged_reason = json.text("not_judged_reason");
  // Added 2026-12-06 (memory.judge): absent in older files, whose memory was never opted out.
  memory.opted_out = json.has("opted_out") && json.flag("opted_out");
  memory.boundaries = json.integer("boundaries");
  memory.warmup_steps = json.integer("warmup_steps");
  memory.window = json.integer("window");
  memory.tensor = trend_from(json.object("tensor"));
  memory.host = trend_from(json.object("host"));
  memory.cuda_reserved = trend_from(json.object("cuda_reserved"));
  if (json.has("autograd_nodes")) memory.autograd_nodes = trend_from(json.object("autograd_nodes"));
  const ResultsObject survivors = json.object("survivors");
  memory.survivors.allocations_by_step = survivors.integers("allocations_by_step");
  memory.survivors.allocations_per_step = survivors.number("allocations_per_step");
  memory.survivors.bytes_per_step = survivors.number("bytes_per_step");
  memory.survivors.windows = survivors.integer("windows");
  memory.survivors.in_every_window = survivors.flag("in_every_window");
  memory.tensor_bookkeeping_bytes = json.integer("tensor_bookkeeping_bytes");
  memory.diagnoses = diagnosis_kinds_from(json, "diagnoses");
  memory.explanations = json.texts("explanations");
  memory.surviving = json.text("surviving");
  memory.peak_tensor_bytes = json.integer("peak_tensor_bytes");
  memory.budget_peak_bytes = json.optional_integer("budget_peak_bytes");
  memory.capacity_bytes = json.integer("capacity_bytes");
  memory.out_of_memory_step = json.optional_integer("out_of_memory_step");
  memory.evaluation_peak_bytes = json.integer("evaluation_peak_bytes");
  memory.evaluation_peak_bytes_no_grad = json.integer("evaluation_peak_bytes_no_grad");
  memory.notes = json.text("notes");
  return memory;
}

ModelStateBytes model_states_from(const ResultsObject& json) {
  return {json.integer("parameters"), json.integer("gradients"),
          json.integer("optimizer_states")};
}

ZeroJudgement zero_from(const ResultsObject& json) {
  ZeroJudgement zero;
  zero.zero_stage = json.integer("zero_stage");
  zero.world_size = json.integer("world_size");
  zero.gradient_accumulation_steps = json.integer("gradient_accumulation_steps");
  zero.parameter_numel = json.integer("parameter_numel");
  zero.partitioned_numel = json.integer("partitioned_numel");
  const ResultsObject bytes = json.object("bytes_per_parameter");
  zero.bytes_per_parameter = {bytes.integer("parameters"), bytes.integer("gradients"),
                              bytes.integer("optimizer_states")};
  const ResultsObject states = json.object("model_states");
  zero.measured = model_states_from(states.object("measured"));
  zero.expected = model_states_from(states.object("expected"));
  zero.expected_paper = model_states_from(states.object("expected_unpadded"));
  zero.model_states_ratio = states.number("ratio");
  const ResultsObject traffic = json.object("traffic");
  zero.traffic_judged = traffic.flag("judged");
  zero.ring_bytes_per_step = traffic.integer("ring_bytes_per_step");
  zero.expected_ring_bytes_per_step = traffic.integer("expected_ring_bytes_per_step");
  zero.traffic_ratio = traffic.number("ratio");
  zero.not_judged_reason = json.text("not_judged_reason");
  zero.tensor_bytes_at_boundary = json.integer("tensor_bytes_at_boundary");
  zero.harness_tensor_bytes = json.integer("harness_tensor_bytes");
  zero.diagnoses = diagnosis_kinds_from(json, "diagnoses");
  zero.explanations = json.texts("explanations");
  // A ZeRO judgement is in the file only when it was made.
  zero.judged = true;
  return zero;
}

}  // namespace

RunProvenance provenance_from_json(const nlohmann::json& value, const std::string& source) {
  const ResultsObject provenance = ResultsObject(value, source, "").object("provenance");
  RunProvenance read;
  read.started_at = provenance.text("started_at");
  read.host = provenance.text("host");
  read.machine = provenance.text("machine");
  read.git_commit = provenance.text("git_commit");
  read.command_line = provenance.text("command_line");
  read.trainrepro_version = provenance.text("trainrepro_version");
  read.torch_version = provenance.text("torch_version");
  read.cuda_version = provenance.text("cuda_version");
  return read;
}

ScenarioResult result_from_json(const nlohmann::json& value, const std::string& source) {
  const ResultsObject json(value, source, "");
  if (json.text("format") != "trainrepro-result") {
    json.fail("format", "\"trainrepro-result\"", json.at("format"));
  }
  if (json.integer("format_version") != kResultsFormatVersion) {
    json.fail("format_version",
              std::to_string(kResultsFormatVersion) + " (written by trainrepro " +
                  TRAINREPRO_VERSION + "; rerun the scenario to rewrite it)",
              json.at("format_version"));
  }
  ScenarioResult result;
  result.torch_version = json.text("torch_version");
  result.deepspeed_version = json.text("deepspeed_version");
  // Absent in results written before `run --engine` existed: the reference engine trained them.
  result.engine = json.has("engine") ? json.text("engine") : std::string(kReferenceEngine);
  // Null unless `--engine deepspeed` ran a scenario with "deepspeed_releases"; absent before.
  if (json.has("release_expectation") && !json.is_null("release_expectation")) {
    result.release_expectation = json.text("release_expectation");
  }
  const ResultsObject scenario = json.object("scenario");
  result.name = scenario.text("name");
  result.file = scenario.text("file");
  result.description = scenario.text("description");
  result.tags = scenario.texts("tags");
  // Absent in results written before catalogue references existed.
  if (scenario.has("reference") && !scenario.is_null("reference")) {
    const ResultsObject reference = scenario.object("reference");
    result.reference = BugReference{reference.text("url"), reference.text("project"),
                                    reference.text("affected"), reference.text("fixed")};
  }

  Verdict& verdict = result.verdict;
  verdict.outcome = json.spelled(
      "outcome",
      spellings_from_names({Outcome::passed, Outcome::failed, Outcome::reproduced,
                            Outcome::not_reproduced, Outcome::error, Outcome::skipped},
                           outcome_name));
  verdict.error_source = json.spelled(
      "error_source",
      spellings_from_names({ErrorSource::none, ErrorSource::scenario, ErrorSource::infrastructure},
                           error_source_name));
  verdict.expected = json.text("expected");
  verdict.found = json.text("found");
  verdict.diagnosis = json.is_null("diagnosis") ? "" : json.text("diagnosis");
  if (json.integer("exit_code") != exit_code_of(verdict)) {
    json.fail("exit_code",
              std::to_string(exit_code_of(verdict)) + ", the exit code of the outcome and error "
                                                      "source written beside it",
              json.at("exit_code"));
  }
  result.warnings = json.texts("warnings");
  if (!json.is_null("plan")) result.plan = plan_from(json.object("plan"));
  if (!json.is_null("training")) result.training = training_from(json.object("training"));
  if (!json.is_null("memory")) {
    const ResultsObject memory = json.object("memory");
    result.memory = memory_from(memory);
    for (const ResultsObject& sample : memory.objects("samples")) {
      result.memory_samples.push_back(sample_from(sample));
    }
  }
  if (!json.is_null("zero")) result.zero = zero_from(json.object("zero"));
  const ResultsObject timings = json.object("timings");
  result.seconds = timings.number("total_seconds");
  result.golden_seconds = timings.number("golden_seconds");
  result.training_seconds = timings.number("training_seconds");
  result.judging_seconds = timings.number("judging_seconds");
  return result;
}

}  // namespace trainrepro
