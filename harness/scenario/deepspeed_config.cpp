#include "harness/scenario/deepspeed_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <limits>
#include <set>

#include "harness/json/scenario_error.h"
#include "harness/scenario/pydantic_error.h"

namespace trainrepro {
namespace {

// Keys that change nothing trainrepro measures (logging, monitoring, profiling): accepted
// without a warning so that real configs do not drown the one warning that matters.
const std::set<std::string>& keys_without_numerical_effect() {
  static const std::set<std::string> keys = {
      "steps_per_print", "wall_clock_breakdown", "dump_state", "memory_breakdown", "tensorboard",
      "wandb",           "csv_monitor",          "comet",      "comms_logger",     "flops_profiler",
      "logging"};
  return keys;
}

// Hugging Face's Trainer replaces "auto" before DeepSpeed sees the config; DeepSpeed itself
// cannot read it, and neither can we.
[[noreturn]] void fail_on_auto(const ObjectReader& section, const std::string& key) {
  section.fail(key,
               "found the string \"auto\": \"auto\" is filled in by the Hugging Face "
               "Trainer, not by DeepSpeed; write the value it resolves to");
}

bool is_auto(const nlohmann::json& value) { return value.is_string() && value == "auto"; }

// A batch key: absent or null reads as "not given", as DeepSpeed's `dict.get(key, None)`.
std::optional<int64_t> read_batch_key(ObjectReader& section, const std::string& key) {
  section.note_known(key);
  if (!section.has(key)) return std::nullopt;
  const nlohmann::json& value = section.required_value(key);
  if (value.is_null()) return std::nullopt;
  if (is_auto(value)) fail_on_auto(section, key);
  // Beyond 2^40 the products MB * GAS * world size could overflow; no real batch is that big.
  constexpr int64_t kLargest = int64_t{1} << 40;
  if (!value.is_number_integer() || value.get<int64_t>() > kLargest ||
      value.get<int64_t>() < -kLargest) {
    section.fail(key, "expected an integer or null, found " + describe_json_value(value));
  }
  return value.get<int64_t>();
}

bool read_enabled_flag(ObjectReader& section, const std::string& key) {
  if (section.has(key) && is_auto(section.required_value(key))) fail_on_auto(section, key);
  return section.optional_bool(key, false);
}

void warn_about_unread_keys(const ObjectReader& section, const std::string& why,
                            std::vector<std::string>& warnings,
                            const std::set<std::string>& quiet_keys = {}) {
  for (const std::string& key : section.unknown_keys()) {
    if (quiet_keys.count(key)) continue;
    warnings.push_back(section.file() + ":" + section.pointer_to(key) + ": " + why);
  }
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : separator) + part;
  return joined;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// torch.optim's optimizer classes (torch 2.11): DeepSpeed builds any of them by exact name.
const std::set<std::string>& torch_optimizer_names() {
  static const std::set<std::string> names = {
      "ASGD",  "Adadelta", "Adafactor", "Adagrad", "Adam",  "AdamW", "Adamax",
      "LBFGS", "NAdam",    "RAdam",     "RMSprop", "Rprop", "SGD",   "SparseAdam"};
  return names;
}

void read_adam_betas(ObjectReader& params, OptimizerConfig& optimizer) {
  if (params.has("betas")) {
    const nlohmann::json& betas = params.required_value("betas");
    if (!betas.is_array() || betas.size() != 2 || !betas[0].is_number() || !betas[1].is_number()) {
      params.fail("betas",
                  "expected two numbers [beta1, beta2], found " + describe_json_value(betas));
    }
    optimizer.beta1 = betas[0].get<double>();
    optimizer.beta2 = betas[1].get<double>();
  }
}

void read_adam_params(ObjectReader& params, OptimizerConfig& optimizer) {
  read_adam_betas(params, optimizer);
  optimizer.eps = params.optional_number("eps", optimizer.eps, 0.0);
  const bool adam_w_mode = params.optional_bool("adam_w_mode", true);
  optimizer.decoupled_weight_decay = optimizer.kind == OptimizerKind::adamw || adam_w_mode;
  // torch_adam chooses torch.optim's class, and DeepSpeed passes no weight_decay to it: then
  // torch's own default holds, 0.01 for AdamW (runtime/engine.py _configure_basic_optimizer).
  const bool torch_adam = params.optional_bool("torch_adam", false);
  const double decay_default = torch_adam && optimizer.decoupled_weight_decay ? 0.01 : 0.0;
  optimizer.weight_decay = params.optional_number("weight_decay", decay_default, 0.0);
}

bool one_bit_optimizer(const std::string& lowercase_type) {
  return lowercase_type == "onebitadam" || lowercase_type == "zerooneadam" ||
         lowercase_type == "onebitlamb";
}

// What the optimizers the engine lacks are, so the user knows whether a run without them would
// still tell the truth.
std::string why_optimizer_not_implemented(const std::string& lowercase_type) {
  if (one_bit_optimizer(lowercase_type)) {
    return ": it compresses the gradient exchange to 1 bit after a warm-up of plain Adam "
           "(freeze_step) and needs NCCL or MPI with cupy on GPUs; its updates after the "
           "warm-up are not Adam's, so no float64 golden judges them";
  }
  return "";
}

// FusedLamb(params, **the config's params): Python refuses a keyword it does not take, the class
// refuses amsgrad. The values land in `optimizer`.
std::optional<std::string> read_lamb_params(const nlohmann::json& raw_params, ObjectReader& params,
                                            OptimizerConfig& optimizer) {
  static const std::vector<std::string> keywords = {
      "lr", "bias_correction", "betas", "eps", "eps_inside_sqrt", "weight_decay", "max_coeff",
      "min_coeff", "amsgrad"};
  for (const auto& item : raw_params.items()) {
    if (!contains(keywords, item.key())) {
      return "TypeError: FusedLamb.__init__() got an unexpected keyword argument '" + item.key() +
             "' (at " + params.file() + ":" + params.pointer_to(item.key()) + ")";
    }
  }
  if (params.optional_bool("amsgrad", false)) {
    return "RuntimeError: FusedLamb does not support the AMSGrad variant.";
  }
  read_adam_betas(params, optimizer);
  optimizer.eps = params.optional_number("eps", optimizer.eps, 0.0);
  optimizer.weight_decay = params.optional_number("weight_decay", 0.0, 0.0);
  optimizer.bias_correction = params.optional_bool("bias_correction", true);
  optimizer.eps_inside_sqrt = params.optional_bool("eps_inside_sqrt", false);
  optimizer.max_coeff = params.optional_number("max_coeff", 10.0, 0.0);
  optimizer.min_coeff = params.optional_number("min_coeff", 0.01, 0.0);
  optimizer.decoupled_weight_decay = false;  // inside the update, before the trust ratio
  return std::nullopt;
}

// DeepSpeed's lookup (runtime/engine.py _configure_basic_optimizer): its own optimizer names
// case-insensitively, any other name as a torch.optim class, exactly as written; a name that is
// neither fails its assertion at deepspeed.initialize.
void read_optimizer(ObjectReader& section, const DeepSpeedRelease& release,
                    DeepSpeedConfig& result) {
  ObjectReader block = section.required_object("optimizer");
  if (!block.has("type")) {
    // DeepSpeed's get_optimizer_name reads an optimizer block without "type" as no optimizer
    // at all (its "params" are never read), so deepspeed.initialize builds none from it.
    block.note_known("params");
    result.warnings.push_back(section.file() + ":" + section.pointer_to("optimizer") +
                              ": has no \"type\": DeepSpeed builds no optimizer from it "
                              "(the training script must pass one to deepspeed.initialize)");
    return;
  }
  OptimizerConfig optimizer;
  optimizer.type_as_written = block.required_string("type");
  result.optimizer_type = optimizer.type_as_written;
  const std::string type = lowercase(optimizer.type_as_written);
  const std::string implemented = " (implemented: \"Adam\", \"AdamW\", \"Lamb\", \"SGD\")";
  if (type == "adam" || type == "adamw") {
    optimizer.kind = type == "adam" ? OptimizerKind::adam : OptimizerKind::adamw;
  } else if (type == "lamb") {
    optimizer.kind = OptimizerKind::lamb;
  } else if (contains(release.deepspeed_optimizer_names, type)) {
    result.optimizer_not_implemented =
        "DeepSpeed " + release.version + " optimizer \"" + optimizer.type_as_written +
        "\" is not implemented by the reference engine" + implemented +
        why_optimizer_not_implemented(type);
    return;
  } else if (optimizer.type_as_written == "SGD") {
    optimizer.kind = OptimizerKind::sgd;
  } else if (torch_optimizer_names().count(optimizer.type_as_written)) {
    result.optimizer_not_implemented = "torch.optim." + optimizer.type_as_written +
                                       " is not implemented by the reference engine" + implemented;
    return;
  } else {
    // DeepSpeed lowercases its own names only, so "sgd" is looked up in torch.optim and fails.
    const std::string shown =
        contains(release.deepspeed_optimizer_names, type) ? type : optimizer.type_as_written;
    result.optimizer_refused =
        ConfigError{ConfigErrorKind::optimizer_not_supported,
                    "AssertionError: " + shown + " is not a supported DeepSpeed Optimizer"};
    if (one_bit_optimizer(type)) {
      result.optimizer_refused->message +=
          " (1-bit Adam, 0/1 Adam and 1-bit LAMB were removed in DeepSpeed 0.19.7; set "
          "\"deepspeed_version\": \"0.16.9\" for a release that has them)";
    }
    if (lowercase(shown) == "sgd") {
      result.optimizer_refused->message +=
          " (DeepSpeed matches its own optimizer names in any case, but other names are "
          "torch.optim classes spelled exactly: write \"SGD\")";
    }
    return;
  }

  ObjectReader params = block.optional_object("params");
  // _configure_basic_optimizer refuses it for every optimizer before building one.
  if (params.has("max_grad_norm")) {
    result.optimizer_refused = ConfigError{
        ConfigErrorKind::optimizer_invalid,
        "ValueError: 'max_grad_norm' is not supported as an optimizer parameter, please switch "
        "to using the deepspeed parameter 'gradient_clipping' (at " + params.file() + ":" +
            params.pointer_to("max_grad_norm") + ")"};
    return;
  }
  optimizer.lr = params.optional_number("lr", optimizer.lr, 0.0);
  if (optimizer.kind == OptimizerKind::lamb) {
    if (auto refusal = read_lamb_params(block.required_value("params"), params, optimizer)) {
      result.optimizer_refused = ConfigError{ConfigErrorKind::optimizer_invalid, *refusal};
      return;
    }
  } else if (optimizer.kind == OptimizerKind::sgd) {
    optimizer.weight_decay = params.optional_number("weight_decay", 0.0, 0.0);
    optimizer.momentum = params.optional_number("momentum", 0.0, 0.0);
    optimizer.dampening = params.optional_number("dampening", 0.0, 0.0);
    optimizer.nesterov = params.optional_bool("nesterov", false);
  } else {
    read_adam_params(params, optimizer);
  }
  warn_about_unread_keys(params,
                         "optimizer parameter not implemented by the reference engine; "
                         "ignored",
                         result.warnings);
  warn_about_unread_keys(block, "not implemented by the reference engine; ignored",
                         result.warnings);
  result.optimizer = optimizer;
}

// OneCycle(optimizer, cycle_min_lr, cycle_max_lr, **the rest): what Python or the class refuses
// is returned in their words; the values land in `cycle`.
std::optional<std::string> read_one_cycle(const nlohmann::json& raw_params, ObjectReader& params,
                                          const DeepSpeedRelease& release, DeepSpeedConfig& result,
                                          OneCycleParams& cycle) {
  static const std::vector<std::string> keywords = {
      "cycle_min_lr",           "cycle_max_lr",          "decay_lr_rate",
      "cycle_first_step_size",  "cycle_second_step_size", "cycle_first_stair_count",
      "cycle_second_stair_count", "decay_step_size",      "cycle_momentum",
      "cycle_min_mom",          "cycle_max_mom",         "decay_mom_rate",
      "last_batch_iteration"};
  for (const auto& item : raw_params.items()) {
    if (!contains(keywords, item.key())) {
      return "TypeError: OneCycle.__init__() got an unexpected keyword argument '" + item.key() +
             "' (at " + params.file() + ":" + params.pointer_to(item.key()) + ")";
    }
  }
  std::vector<std::string> missing;
  for (const char* key : {"cycle_min_lr", "cycle_max_lr"}) {
    if (!params.has(key)) missing.push_back(std::string("'") + key + "'");
  }
  if (missing.size() == 1) {
    return "TypeError: OneCycle.__init__() missing 1 required positional argument: " + missing[0];
  }
  if (missing.size() == 2) {
    return "TypeError: OneCycle.__init__() missing 2 required positional arguments: " +
           missing[0] + " and " + missing[1];
  }
  const double lowest = -std::numeric_limits<double>::infinity();  // Python checks no sign
  cycle.cycle_min_lr = params.optional_number("cycle_min_lr", 0.0, lowest);
  cycle.cycle_max_lr = params.optional_number("cycle_max_lr", 0.0, lowest);
  cycle.decay_lr_rate = params.optional_number("decay_lr_rate", 0.0, lowest);
  cycle.cycle_first_step_size = params.optional_number("cycle_first_step_size", 2000.0, lowest);
  cycle.cycle_second_step_size =
      params.optional_number("cycle_second_step_size", cycle.cycle_first_step_size, lowest);
  // 0.19.8 checks both halves; 0.16.9 does not, and divides by zero (refused here in 0.19.8's
  // words either way: no run can follow such a schedule).
  if (cycle.cycle_first_step_size <= 0.0) {
    return "ValueError: cycle_first_step_size must be positive, got " +
           params.required_value("cycle_first_step_size").dump();
  }
  if (cycle.cycle_second_step_size < 0.0) {
    return "ValueError: cycle_second_step_size must be non-negative, got " +
           params.required_value("cycle_second_step_size").dump();
  }
  cycle.cycle_first_stair_count = params.optional_int("cycle_first_stair_count", 0, 0);
  cycle.cycle_second_stair_count =
      params.optional_int("cycle_second_stair_count", cycle.cycle_first_stair_count, 0);
  cycle.stair_counts_applied = release.one_cycle_stair_counts_applied;
  if (!cycle.stair_counts_applied &&
      (cycle.cycle_first_stair_count > 0 || cycle.cycle_second_stair_count > 0)) {
    result.warnings.push_back(params.file() + ":" + params.pointer_to("cycle_first_stair_count") +
                              ": DeepSpeed " + release.version +
                              " accepts the stair counts and ignores them (the rate moves "
                              "every batch)");
  }
  cycle.decay_step_size = params.optional_number("decay_step_size", 0.0, 0.0);
  cycle.cycle_momentum = params.optional_bool("cycle_momentum", true);
  cycle.cycle_min_mom = params.optional_number("cycle_min_mom", 0.8, lowest);
  cycle.cycle_max_mom = params.optional_number("cycle_max_mom", 0.9, lowest);
  cycle.decay_mom_rate = params.optional_number("decay_mom_rate", 0.0, lowest);
  if (params.has("last_batch_iteration") &&
      params.required_value("last_batch_iteration") != nlohmann::json(-1)) {
    result.scheduler_not_implemented =
        "a scheduler resumed from last_batch_iteration other than -1 is not implemented by the "
        "reference engine";
  }
  return std::nullopt;
}

// "warmup_num_steps" of WarmupLR, WarmupDecayLR and WarmupCosineLR, by the release's rule
// (runtime/lr_schedules.py __init__): both warm up over max(2, n) steps; from 0.19.3 an n that
// is not a Python int (a bool is one: true is 1) or is <= 0 is a ValueError first, while 0.16.9
// takes any number (0 warms up over 2 steps) and fails only where max() cannot compare it with
// 2. Returns the refusal in Python's words, if any.
std::optional<std::string> read_warmup_num_steps(ObjectReader& params,
                                                 const DeepSpeedRelease& release,
                                                 DeepSpeedConfig& result, LrSchedule& schedule) {
  params.note_known("warmup_num_steps");
  if (!params.has("warmup_num_steps")) return std::nullopt;  // the default, 1000
  const nlohmann::json& steps = params.required_value("warmup_num_steps");
  // As an f-string writes it (str(), not repr()): got 0, got x, got None.
  const std::string as_python = steps.is_string() ? steps.get<std::string>() : python_repr(steps);
  const bool python_int = steps.is_number_integer() || steps.is_boolean();
  if (release.warmup_num_steps_validated &&
      (!python_int || (steps.is_boolean() ? !steps.get<bool>() : steps.get<int64_t>() <= 0))) {
    return "ValueError: warmup_num_steps must be a positive integer, got " + as_python;
  }
  if (!steps.is_number() && !steps.is_boolean()) {
    return "TypeError: '>' not supported between instances of '" + python_type_name(steps) +
           "' and 'int' (max(2, warmup_num_steps))";
  }
  if (steps.is_boolean()) {
    schedule.warmup_num_steps = 2;  // max(2, True) and max(2, False)
  } else if (steps.is_number_integer()) {
    schedule.warmup_num_steps = params.required_int("warmup_num_steps",
                                                    std::numeric_limits<int64_t>::min());
  } else {
    const double number = steps.get<double>();
    if (number <= 2.0) {
      schedule.warmup_num_steps = 2;  // max(2, n) is 2 whatever n below it was
    } else if (number == std::floor(number) && number < 1e18) {
      schedule.warmup_num_steps = static_cast<int64_t>(number);  // 10.0 warms up as 10 does
    } else {
      result.scheduler_not_implemented =
          "a fractional warmup_num_steps (" + as_python + ", which DeepSpeed " + release.version +
          " warms up over as it is) is not implemented by the reference engine; write a whole "
          "number";
    }
  }
  return std::nullopt;
}

// "scheduler": {"type", "params"}. deepspeed.initialize builds DeepSpeed's own schedulers (or a
// torch.optim.lr_scheduler class of that name) as cls(optimizer, **params)
// (runtime/engine.py _scheduler_from_config); what Python refuses there is scheduler_invalid,
// in Python's words.
void read_scheduler(ObjectReader& section, const DeepSpeedRelease& release,
                    DeepSpeedConfig& result) {
  ObjectReader block = section.required_object("scheduler");
  LrSchedule schedule;
  schedule.type_as_written = block.required_string("type");
  const std::string& type = schedule.type_as_written;
  const auto refuse = [&](const std::string& message) {
    result.scheduler_refused = ConfigError{ConfigErrorKind::scheduler_invalid, message};
  };
  static const std::set<std::string> not_implemented = {
      "LRRangeTest", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR",
      "ConstantLR", "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR",
      "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
      "OneCycleLR", "PolynomialLR"};
  if (type == "WarmupLR") {
    schedule.kind = LrScheduleKind::warmup_lr;
  } else if (type == "WarmupDecayLR") {
    schedule.kind = LrScheduleKind::warmup_decay_lr;
  } else if (type == "WarmupCosineLR") {
    schedule.kind = LrScheduleKind::warmup_cosine_lr;
  } else if (type == "OneCycle") {
    schedule.kind = LrScheduleKind::one_cycle;
  } else if (not_implemented.count(type)) {
    result.scheduler_not_implemented =
        "scheduler \"" + type +
        "\" is valid in DeepSpeed but not implemented by the reference engine (implemented: "
        "\"WarmupLR\", \"WarmupDecayLR\", \"WarmupCosineLR\", \"OneCycle\")";
    return;
  } else {
    refuse("AssertionError: DeepSpeed does not recognize LR scheduler " + type);
    return;
  }
  block.note_known("params");
  if (!block.has("params")) {
    refuse("TypeError: " + type +
           "() argument after ** must be a mapping, not NoneType (a scheduler needs "
           "\"params\")");
    return;
  }
  ObjectReader params = block.required_object("params");
  if (schedule.kind == LrScheduleKind::one_cycle) {
    if (auto refusal = read_one_cycle(block.required_value("params"), params, release, result,
                                      schedule.one_cycle)) {
      refuse(*refusal);
      return;
    }
    warn_about_unread_keys(block, "not read by DeepSpeed's scheduler construction; ignored",
                           result.warnings);
    result.scheduler = schedule;
    return;
  }
  const bool cosine = schedule.kind == LrScheduleKind::warmup_cosine_lr;
  // Python refuses a keyword the class does not take.
  const std::set<std::string> accepted =
      cosine ? std::set<std::string>{"total_num_steps", "warmup_min_ratio", "warmup_num_steps",
                                     "cos_min_ratio", "warmup_type", "last_batch_iteration"}
             : std::set<std::string>{"total_num_steps", "warmup_min_lr", "warmup_max_lr",
                                     "warmup_num_steps", "warmup_type", "last_batch_iteration"};
  for (const auto& item : block.required_value("params").items()) {
    const std::string& key = item.key();
    if (!accepted.count(key) ||
        (key == "total_num_steps" && schedule.kind == LrScheduleKind::warmup_lr)) {
      refuse("TypeError: " + type + ".__init__() got an unexpected keyword argument '" + key +
             "' (at " + params.file() + ":" + params.pointer_to(key) + ")");
      return;
    }
  }
  if (schedule.kind != LrScheduleKind::warmup_lr && !params.has("total_num_steps")) {
    refuse("TypeError: " + type +
           ".__init__() missing 1 required positional argument: 'total_num_steps'");
    return;
  }
  if (auto refusal = read_warmup_num_steps(params, release, result, schedule)) {
    refuse(*refusal);
    return;
  }
  if (!result.scheduler_not_implemented.empty()) return;
  if (params.has("total_num_steps")) {
    schedule.total_num_steps = params.required_int("total_num_steps", 0);
  }
  const std::string warmup_type = params.optional_string("warmup_type", "log");
  if (warmup_type == "linear") {
    schedule.warmup_type = WarmupType::linear;
  } else if (warmup_type != "log") {
    result.warnings.push_back(params.file() + ":" + params.pointer_to("warmup_type") +
                              ": DeepSpeed warns \"Using unknown warmup_type: " + warmup_type +
                              "\" and warms up with \"log\"");
  }
  params.note_known("last_batch_iteration");
  if (params.has("last_batch_iteration") &&
      params.required_value("last_batch_iteration") != nlohmann::json(-1)) {
    result.scheduler_not_implemented =
        "a scheduler resumed from last_batch_iteration other than -1 is not implemented by the "
        "reference engine";
    return;
  }
  if (cosine) {
    schedule.warmup_min_ratio = params.optional_number("warmup_min_ratio", 0.0, 0.0);
    schedule.cos_min_ratio = params.optional_number("cos_min_ratio", 0.0001, 0.0);
    schedule.cosine_progress_clamped = release.cosine_progress_clamped;
    schedule.construction_rate_first_group_only =
        release.cosine_construction_rate_first_group_only;
  } else {
    schedule.warmup_min_lr = params.optional_number("warmup_min_lr", 0.0, 0.0);
    // WarmupDecayLR keeps 0.001; WarmupLR takes the optimizer's lr where the release says.
    const bool optimizer_lr_default = schedule.kind == LrScheduleKind::warmup_lr &&
                                      release.warmup_lr_max_defaults_to_optimizer_lr;
    if (params.has("warmup_max_lr") || !optimizer_lr_default) {
      schedule.warmup_max_lr = params.optional_number("warmup_max_lr", 0.001, 0.0);
    }
  }
  warn_about_unread_keys(block, "not read by DeepSpeed's scheduler construction; ignored",
                         result.warnings);
  result.scheduler = schedule;
}

// DeepSpeedConfig refuses keys of features it removed before reading anything else.
std::optional<ConfigError> find_removed_key(const nlohmann::json& config,
                                            const DeepSpeedRelease& release) {
  for (const RemovedKey& removed : release.removed_keys) {
    const nlohmann::json* section = &config;
    if (!removed.section.empty()) {
      if (!config.contains(removed.section) || !config[removed.section].is_object()) continue;
      section = &config[removed.section];
    }
    if (section->contains(removed.key)) {
      return ConfigError{ConfigErrorKind::removed_key, "DeepSpeedConfigError: " + removed.message};
    }
  }
  return std::nullopt;
}

const ValidatedSection* validated_section(const DeepSpeedRelease& release,
                                          const std::string& schema_pointer) {
  for (const ValidatedSection& section : release.validated_sections) {
    if (section.pointer == schema_pointer) return &section;
  }
  return nullptr;
}

// The keys of `value` (the section at `schema_pointer` inside the DeepSpeed config) that its
// release's pydantic model does not know; none where the release does not validate it.
std::vector<std::string> keys_outside_schema(const DeepSpeedRelease& release,
                                             const std::string& schema_pointer,
                                             const nlohmann::json& value) {
  std::vector<std::string> outside;
  const ValidatedSection* schema = validated_section(release, schema_pointer);
  if (schema == nullptr || !value.is_object()) return outside;
  for (const auto& item : value.items()) {
    if (!contains(schema->keys, item.key())) outside.push_back(item.key());
  }
  return outside;
}

// One pydantic model's ValidationError as it is put together: its errors in pydantic's order
// (pydantic_error.h), the kind of the first, and what we say after DeepSpeed's text.
struct ModelRefusal {
  std::vector<PydanticError> errors;
  std::optional<ConfigErrorKind> kind;
  std::vector<std::string> notes;
  std::vector<std::string> forbidden_at;                         // JSON pointers, in order
  std::vector<std::pair<std::string, std::string>> typo_hints;  // (key as written, closest)
};

// An error for each key of `section` (reading `value`, the section at `schema_pointer` inside
// the config) that the release's model does not know, in the file's order.
void add_forbidden_keys(const ObjectReader& section, const DeepSpeedRelease& release,
                        const std::string& schema_pointer, const nlohmann::json& value,
                        ModelRefusal& refusal) {
  const ValidatedSection* schema = validated_section(release, schema_pointer);
  if (schema == nullptr || !value.is_object()) return;
  // pydantic names a nested model's key by its dotted path inside the model's own section.
  const size_t nested = schema_pointer.find('/', 1);
  const std::string prefix =
      nested == std::string::npos ? "" : schema_pointer.substr(nested + 1) + ".";
  for (const std::string& key : section.keys_in_file_order()) {
    if (contains(schema->keys, key)) continue;
    refusal.errors.push_back({prefix + key, extra_forbidden_text(value.at(key))});
    if (!refusal.kind) refusal.kind = ConfigErrorKind::unknown_section_key;
    refusal.forbidden_at.push_back(section.pointer_to(key));
    const std::string closest = closest_spelling(key, schema->keys);
    if (!closest.empty()) refusal.typo_hints.emplace_back(key, closest);
  }
}

// DeepSpeedConfig validates its pydantic sections while reading params, after the removed keys
// and before the batch arithmetic; the first refusal is the one the user sees.
void refuse_model(const ModelRefusal& refusal, const std::string& model, const std::string& file,
                  const DeepSpeedRelease& release, DeepSpeedConfig& result) {
  if (result.refused_while_reading || refusal.errors.empty()) return;
  std::vector<std::string> notes = refusal.notes;
  if (!refusal.forbidden_at.empty()) {
    std::string note = "at " + file + ":" + join(refusal.forbidden_at, ", ") + "; DeepSpeed " +
                       release.version + " refuses any key its schema does not know";
    std::vector<std::string> hints;
    for (const auto& [written, closest] : refusal.typo_hints) {
      hints.push_back("\"" + closest + "\"" +
                      (refusal.forbidden_at.size() == 1 ? "" : " for \"" + written + "\""));
    }
    if (!hints.empty()) note += ": did you mean " + join(hints, ", ") + "?";
    notes.push_back(note);
  }
  result.refused_while_reading =
      ConfigError{*refusal.kind,
                  validation_error_line(model, refusal.errors) + " (" + join(notes, "; ") + ")"};
}

// A section DeepSpeed validates with one model of its own (`section` reads `value`): keys
// outside its schema are refused, the others the reference engine does not read are warned
// about as ignored.
void check_validated_section(const ObjectReader& section, const DeepSpeedRelease& release,
                             const std::string& schema_pointer, const nlohmann::json& value,
                             const std::string& why_ignored, DeepSpeedConfig& result) {
  ModelRefusal refusal;
  add_forbidden_keys(section, release, schema_pointer, value, refusal);
  if (const ValidatedSection* schema = validated_section(release, schema_pointer)) {
    refuse_model(refusal, schema->model, section.file(), release, result);
  }
  const std::vector<std::string> outside = keys_outside_schema(release, schema_pointer, value);
  warn_about_unread_keys(section, why_ignored, result.warnings,
                         std::set<std::string>(outside.begin(), outside.end()));
}

// An integer as pydantic's lax mode reads one: an integer, a whole float, a string of digits or a
// boolean; nothing for anything else.
std::optional<int64_t> lax_integer(const nlohmann::json& value) {
  if (value.is_boolean()) return value.get<bool>() ? 1 : 0;
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (std::isfinite(number) && number == std::floor(number) && std::fabs(number) < 1e18) {
      return static_cast<int64_t>(number);
    }
    return std::nullopt;
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    size_t digits_from = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    if (text.size() == digits_from || text.size() > 18) return std::nullopt;
    for (size_t i = digits_from; i < text.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    }
    return std::stoll(text);
  }
  return std::nullopt;
}

// "stage3_param_persistence_threshold" (the alias DeepSpeed's docs use) or
// "param_persistence_threshold" (the pydantic field's own name, also accepted): an integer >= 0
// in pydantic's lax mode (1e5 from a JSON file is the float 100000.0, which pydantic takes as an
// int because it has no fraction). Anything else is DeepSpeedZeroConfig's ValidationError.
void read_param_persistence_threshold(ObjectReader& zero, ModelRefusal& refusal,
                                      DeepSpeedConfig& result) {
  for (const std::string key : {"stage3_param_persistence_threshold", "param_persistence_threshold"}) {
    zero.note_known(key);
    if (!zero.has(key)) continue;
    const nlohmann::json& value = zero.required_value(key);
    if (is_auto(value)) {
      // DeepSpeedConfigModel drops a key whose value is "auto" before validating (config_utils.py,
      // measured with 0.19.8: "auto" reads as 100000); under hf_trainer the Trainer fills it first.
      result.warnings.push_back(zero.file() + ":" + zero.pointer_to(key) +
                                ": \"auto\" outside the Hugging Face Trainer: DeepSpeed drops the "
                                "key and uses its default, 100000");
      continue;
    }
    const std::optional<int64_t> written = lax_integer(value);
    if (!written) {
      const bool fraction = value.is_number_float() && std::isfinite(value.get<double>());
      refusal.errors.push_back(
          {key, std::string(fraction ? "Input should be a valid integer, got a number with a "
                                       "fractional part [type=int_from_float"
                                     : "Input should be a valid integer [type=int_parsing") +
                    ", input_value=" + python_repr(value) + ", input_type=" +
                    python_type_name(value) + "]"});
    } else if (*written < 0) {
      refusal.errors.push_back({key, "Input should be greater than or equal to 0 "
                                     "[type=greater_than_equal, input_value=" +
                                     python_repr(value) + ", input_type=" +
                                     python_type_name(value) + "]"});
    } else {
      result.zero3_param_persistence_threshold = *written;
    }
  }
}

// "zero_optimization": {"stage": N, …}, or the legacy boolean DeepSpeed still reads as stage 1
// (runtime/zero/config.py read_zero_config_deprecated). A stage outside 0-3 fails the pydantic
// schema of DeepSpeedZeroConfig, before any batch arithmetic.
void read_zero_optimization(ObjectReader& section, const DeepSpeedRelease& release,
                            DeepSpeedConfig& result) {
  section.note_known("zero_optimization");
  if (!section.has("zero_optimization")) return;
  const nlohmann::json& value = section.required_value("zero_optimization");
  if (value.is_boolean()) {
    result.zero_stage = value.get<bool>() ? 1 : 0;
    result.warnings.push_back(section.file() + ":" + section.pointer_to("zero_optimization") +
                              ": the boolean form is deprecated; DeepSpeed reads " +
                              (value.get<bool>() ? "true as stage 1" : "false as stage 0") +
                              " (write {\"stage\": " + std::to_string(result.zero_stage) + "})");
    return;
  }
  ObjectReader zero = section.optional_object("zero_optimization");
  // One ValidationError for the whole model: the stage (its first field), the nested offload
  // models (offload_param is declared before offload_optimizer), then its own forbidden keys.
  ModelRefusal refusal;
  zero.note_known("stage");
  if (zero.has("stage")) {
    const nlohmann::json& stage = zero.required_value("stage");
    // pydantic's lax mode: 2, 2.0, "2" and true (1) are stages; anything else, or a number
    // outside 0-3, is its enum error.
    const std::optional<int64_t> written = lax_integer(stage);
    if (!written || *written < 0 || *written > 3) {
      refusal.errors.push_back({"stage", "Input should be 0, 1, 2, 3 or 3 [type=enum, input_value=" +
                                             python_repr(stage) + ", input_type=" +
                                             python_type_name(stage) + "]"});
      refusal.kind = ConfigErrorKind::zero_stage_unsupported;
      refusal.notes.push_back("DeepSpeed's maximum ZeRO stage is 3");
    } else {
      result.zero_stage = *written;
    }
  }
  read_param_persistence_threshold(zero, refusal, result);
  // Every key but the stage and the persistence threshold is ignored here (warned about before
  // the offload sections are looked into, which would count them as read).
  const std::vector<std::string> outside = keys_outside_schema(release, "/zero_optimization", value);
  // Offload moves optimizer states (or parameters) and the step to the CPU: where values live,
  // not what they are, so the reference engine's results stand for DeepSpeed's with it; the real
  // engine (`--engine deepspeed`) runs it, and its offload bugs (catalogue) show there.
  for (const std::string offload : {"offload_optimizer", "offload_param"}) {
    if (!zero.has(offload) || !zero.required_value(offload).is_object()) continue;
    zero.note_known(offload);
    const nlohmann::json& device = zero.required_value(offload).value("device", nlohmann::json());
    if (offload == "offload_optimizer" && device.is_string()) {
      result.offload_optimizer_device = device.get<std::string>();
    }
    result.warnings.push_back(
        zero.file() + ":" + zero.pointer_to(offload) +
        ": placement only: the reference engine keeps these tensors where they are, which "
        "changes no value; --engine deepspeed runs the offload itself");
  }
  warn_about_unread_keys(zero, "ZeRO option not implemented by the reference engine; ignored",
                         result.warnings, std::set<std::string>(outside.begin(), outside.end()));
  for (const std::string offload : {"offload_param", "offload_optimizer"}) {
    if (!zero.has(offload) || !zero.required_value(offload).is_object()) continue;
    add_forbidden_keys(zero.optional_object(offload), release, "/zero_optimization/" + offload,
                       zero.required_value(offload), refusal);
  }
  add_forbidden_keys(zero, release, "/zero_optimization", value, refusal);
  refuse_model(refusal, "DeepSpeedZeroConfig", zero.file(), release, result);
}

// Whether the release's pydantic model of `schema_pointer` has `key` (0.16.9 reads fewer keys).
bool release_reads(const DeepSpeedRelease& release, const std::string& schema_pointer,
                   const std::string& key) {
  for (const ValidatedSection& validated : release.validated_sections) {
    if (validated.pointer == schema_pointer) return contains(validated.keys, key);
  }
  return false;
}

void refuse_precision(DeepSpeedConfig& result, const std::string& message) {
  if (!result.precision_refused) {
    result.precision_refused = ConfigError{ConfigErrorKind::precision_invalid, message};
  }
}

void not_implemented_precision(const ObjectReader& section, const std::string& key,
                               const std::string& why, DeepSpeedConfig& result) {
  if (result.precision_not_implemented.empty()) {
    result.precision_not_implemented = section.file() + ":" + section.pointer_to(key) + ": " + why;
  }
}

// "fp16": the loss scaler's settings, checked as DeepSpeedFP16Config's validators check them
// (runtime/precision_config.py, 0.19): a bad value is DeepSpeed's ValueError, a config error.
void read_fp16(ObjectReader& fp16, DeepSpeedConfig& result) {
  constexpr double lowest = -std::numeric_limits<double>::max();
  Fp16Config& config = result.fp16;
  if (fp16.has("loss_scale") && fp16.required_value("loss_scale").is_boolean()) {
    refuse_precision(result, "fp16.loss_scale must be a number, not bool");
  } else {
    config.loss_scale = fp16.optional_number("loss_scale", 0.0, lowest);
  }
  if (config.loss_scale < 0.0) {
    refuse_precision(result, "fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)");
  }
  // 2**power must be a finite float (a larger power overflows DeepSpeed's float scale too).
  config.initial_scale_power = fp16.optional_int("initial_scale_power", 16, -1022);
  if (config.initial_scale_power > 1023) {
    fp16.fail("initial_scale_power", "expected at most 1023 (2**power must be a finite float), "
                                     "found " + std::to_string(config.initial_scale_power));
  }
  config.loss_scale_window =
      fp16.optional_int("loss_scale_window", 1000, std::numeric_limits<int64_t>::min());
  config.hysteresis = fp16.optional_int("hysteresis", 2, std::numeric_limits<int64_t>::min());
  config.consecutive_hysteresis = fp16.optional_bool("consecutive_hysteresis", false);
  config.min_loss_scale = fp16.optional_number("min_loss_scale", 1.0, lowest);
  if (result.fp16_enabled && config.loss_scale == 0.0) {
    if (config.loss_scale_window <= 0) {
      refuse_precision(result, "fp16.loss_scale_window must be > 0 when dynamic loss scaling is "
                               "enabled (loss_scale=0)");
    }
    if (config.min_loss_scale <= 0.0) {
      refuse_precision(result, "fp16.min_loss_scale must be > 0 when dynamic loss scaling is "
                               "enabled (loss_scale=0)");
    }
  }
  // Inputs are cast to the model's dtype whatever auto_cast says: the engine's models take
  // floating inputs in their own dtype, as a user's fp16 loop must give them.
  fp16.optional_bool("auto_cast", false);
  if (fp16.optional_bool("fp16_master_weights_and_grads", false) && result.fp16_enabled) {
    not_implemented_precision(fp16, "fp16_master_weights_and_grads",
                              "fp16 master weights (DeepSpeedCPUAdam with ZeRO-Offload only) are "
                              "not implemented by the reference engine",
                              result);
  }
}

void read_bf16(ObjectReader& bf16, const DeepSpeedRelease& release, DeepSpeedConfig& result) {
  // Where accumulated gradients go (immediately through hooks, or after each backward) does
  // not change their values: read, with no effect on the numbers.
  bf16.optional_bool("immediate_grad_update", false);
  if (release_reads(release, "/bf16", "check_grad_overflow")) {
    result.bf16_check_grad_overflow = bf16.optional_bool("check_grad_overflow", true);
  }
  for (const char* key : {"bf16_master_weights_and_grads", "bf16_optimizer_states"}) {
    if (!release_reads(release, "/bf16", key)) continue;
    if (bf16.optional_bool(key, false) && result.bf16_enabled) {
      not_implemented_precision(bf16, key,
                                "bf16 master weights and optimizer states are not implemented by "
                                "the reference engine (it keeps float32 masters, DeepSpeed's "
                                "default)",
                                result);
    }
  }
}

// "data_types": {"grad_accum_dtype": …} in any spelling DeepSpeed's DtypeEnum takes.
void read_data_types(ObjectReader& section, DeepSpeedConfig& result) {
  section.note_known("data_types");
  if (!section.has("data_types")) return;
  ObjectReader data_types = section.optional_object("data_types");
  data_types.note_known("grad_accum_dtype");
  if (data_types.has("grad_accum_dtype") &&
      !data_types.required_value("grad_accum_dtype").is_null()) {
    const std::string dtype = data_types.required_string("grad_accum_dtype");
    static const std::vector<std::pair<std::string, Precision>> spellings = {
        {"torch.float32", Precision::fp32}, {"fp32", Precision::fp32},
        {"float32", Precision::fp32},       {"float", Precision::fp32},
        {"torch.float16", Precision::fp16}, {"fp16", Precision::fp16},
        {"float16", Precision::fp16},       {"half", Precision::fp16},
        {"torch.bfloat16", Precision::bf16}, {"bf16", Precision::bf16},
        {"bfloat16", Precision::bf16}};
    for (const auto& [spelling, precision] : spellings) {
      if (dtype == spelling) result.grad_accum_dtype = precision;
    }
    if (!result.grad_accum_dtype) {
      data_types.fail("grad_accum_dtype",
                      "expected one of DeepSpeed's dtype names (fp32, float32, float, fp16, "
                      "float16, half, bf16, bfloat16, torch.float32, torch.float16, "
                      "torch.bfloat16), found \"" + dtype + "\"");
    }
  }
  warn_about_unread_keys(data_types,
                         "data_types option not implemented by the reference engine; ignored",
                         result.warnings);
}

void read_precision(ObjectReader& section, const DeepSpeedRelease& release,
                    DeepSpeedConfig& result) {
  ObjectReader fp16 = section.optional_object("fp16");
  result.fp16_enabled = read_enabled_flag(fp16, "enabled");
  read_fp16(fp16, result);
  check_validated_section(fp16, release, "/fp16",
                          section.has("fp16") ? section.required_value("fp16") : nlohmann::json(),
                          "fp16 option not implemented by the reference engine; ignored", result);

  // DeepSpeed still accepts the old spelling "bfloat16" for "bf16".
  const std::string bf16_key =
      section.has("bfloat16") && !section.has("bf16") ? "bfloat16" : "bf16";
  ObjectReader bf16 = section.optional_object(bf16_key);
  result.bf16_enabled = read_enabled_flag(bf16, "enabled");
  read_bf16(bf16, release, result);
  check_validated_section(bf16, release, "/bf16",
                          section.has(bf16_key) ? section.required_value(bf16_key) : nlohmann::json(),
                          "bf16 option not implemented by the reference engine; ignored", result);
  read_data_types(section, result);
}

// Top-level keys DeepSpeed reads (runtime/config.py and its sections, 0.16.9 to 0.19.8) that the
// reference engine does not implement. Any other key DeepSpeed itself ignores.
const std::set<std::string>& deepspeed_top_level_keys() {
  static const std::set<std::string> keys = {"scheduler",
                                             "activation_checkpointing",
                                             "aio",
                                             "autotuning",
                                             "checkpoint",
                                             "data_efficiency",
                                             "compile",
                                             "communication_data_type",
                                             "seq_parallel_communication_data_type",
                                             "prescale_gradients",
                                             "gradient_predivide_factor",
                                             "gradient_allreduce_op",
                                             "zero_force_ds_cpu_optimizer",
                                             "pipeline",
                                             "hybrid_engine",
                                             "tensor_parallel",
                                             "torch_autocast",
                                             "disable_allgather",
                                             "dataloader_drop_last",
                                             "weight_quantization",
                                             "timers",
                                             "sequence_parallel_size",
                                             "expert_parallel",
                                             "use_data_before_expert_parallelism",
                                             "log_level",
                                             "disable_python_gc",
                                             "vocabulary_size",
                                             "legacy_fusion",
                                             "zenflow",
                                             "monitor_config",
                                             "amp",
                                             "sparse_gradients",
                                             "elasticity",
                                             "eigenvalue",
                                             "progressive_layer_drop",
                                             "curriculum_learning",
                                             "quantize_training",
                                             "nebula",
                                             "compression_training",
                                             "graph_harvesting",
                                             "sparse_attention",
                                             "managed_gradient_accumulation",
                                             "fp16",
                                             "bf16",
                                             "bfloat16",
                                             "zero_optimization",
                                             "gradient_clipping",
                                             "optimizer",
                                             "train_batch_size",
                                             "train_micro_batch_size_per_gpu",
                                             "gradient_accumulation_steps",
                                             "zero_allow_untested_optimizer"};
  return keys;
}

// What DeepSpeed's "activation_checkpointing" section changes here, option by option
// (runtime/activation_checkpointing/checkpointing.py): only the layout of what a checkpoint keeps.
std::string activation_checkpointing_note(const nlohmann::json& value) {
  std::string note =
      "configures deepspeed.checkpointing.checkpoint, which only the model's own code calls: by "
      "itself it checkpoints nothing (a scenario says whether the model checkpoints its blocks "
      "with the loop key \"activation_checkpointing\")";
  const auto on = [&](const char* option) {
    return value.is_object() && value.contains(option) && value[option] == true;
  };
  if (on("partition_activations")) {
    note += "; partition_activations splits each checkpointed input across the model-parallel "
            "ranks: these runs are data-parallel only (model-parallel size 1, where DeepSpeed "
            "keeps a whole copy), so it changes nothing";
  }
  if (on("cpu_checkpointing")) {
    note += "; cpu_checkpointing keeps the checkpointed inputs in host memory: nothing changes on "
            "a CPU run; on CUDA the reference engine keeps them on the GPU, so its device peak "
            "exceeds DeepSpeed's by those inputs";
  }
  if (on("contiguous_memory_optimization")) {
    note += "; contiguous_memory_optimization copies them into one preallocated buffer (a "
            "layout, not modelled)";
  }
  return note;
}

void warn_about_top_level_keys(ObjectReader& section, const DeepSpeedRelease& release,
                               std::vector<std::string>& warnings) {
  for (const std::string& key : section.unknown_keys()) {
    if (keys_without_numerical_effect().count(key)) continue;
    const std::string where = section.file() + ":" + section.pointer_to(key) + ": ";
    if (key == "managed_gradient_accumulation") {
      warnings.push_back(where + "DeepSpeed " + release.version +
                         " ignores this key (it exists from 0.19.4 on)");
    } else if (key == "activation_checkpointing") {
      warnings.push_back(where + activation_checkpointing_note(section.required_value(key)));
    } else if (deepspeed_top_level_keys().count(key)) {
      warnings.push_back(where +
                         "a DeepSpeed feature the reference engine does not implement; ignored "
                         "(the run may differ from DeepSpeed's where it matters)");
    } else {
      warnings.push_back(where + "not a DeepSpeed " + release.version +
                         " setting: DeepSpeed ignores it too (a typo?)");
    }
  }
}

// Every setting after the removed-key check, in the order trainrepro reads them.
void read_deepspeed_settings(ObjectReader& section, const DeepSpeedRelease& release,
                             DeepSpeedConfig& result) {
  // DeepSpeedConfig validates the ZeRO section (pydantic) before it asserts the batch sizes.
  read_zero_optimization(section, release, result);
  result.batch.train_batch_size = read_batch_key(section, "train_batch_size");
  result.batch.micro_batch_per_gpu = read_batch_key(section, "train_micro_batch_size_per_gpu");
  result.batch.gradient_accumulation_steps = read_batch_key(section, "gradient_accumulation_steps");

  section.note_known("optimizer");
  if (section.has("optimizer")) read_optimizer(section, release, result);
  result.gradient_clipping =
      section.optional_number("gradient_clipping", release.gradient_clipping_default, 0.0);
  result.zero_allow_untested_optimizer =
      section.optional_bool("zero_allow_untested_optimizer", false);
  result.zero_force_ds_cpu_optimizer = section.optional_bool("zero_force_ds_cpu_optimizer", true);
  if (release.has_managed_gradient_accumulation) {
    result.managed_gradient_accumulation =
        section.optional_bool("managed_gradient_accumulation", true);
  }
  section.note_known("scheduler");
  if (section.has("scheduler")) read_scheduler(section, release, result);

  read_precision(section, release, result);
  warn_about_top_level_keys(section, release, result.warnings);
}

}  // namespace

const EnumSpellings<OptimizerKind>& optimizer_spellings() {
  static const EnumSpellings<OptimizerKind> spellings = {
      {OptimizerKind::sgd, "SGD"},
      {OptimizerKind::adam, "Adam"},
      {OptimizerKind::adamw, "AdamW"},
      {OptimizerKind::lamb, "Lamb"}};
  return spellings;
}

DeepSpeedConfig read_deepspeed_config(const nlohmann::json& config, const std::string& file,
                                      const std::string& pointer, const DeepSpeedRelease& release,
                                      const KeyOrder* key_order) {
  ObjectReader section(config, file, pointer, key_order);
  DeepSpeedConfig result;
  result.verbatim = config;
  result.received = config;
  result.release = &release;
  result.refused_while_reading = find_removed_key(config, release);
  for (const RemovedKey& removed : release.removed_keys) {
    if (removed.section.empty()) section.note_known(removed.key);
  }
  // DeepSpeed refuses a removed key before it reads anything else: a bad value elsewhere in
  // such a config is never reached (config.py _reject_removed_config_keys comes first).
  try {
    read_deepspeed_settings(section, release, result);
  } catch (const ScenarioError&) {
    if (!result.refused_while_reading) throw;
  }
  return result;
}

}  // namespace trainrepro
