// "scheduler": which learning-rate schedule DeepSpeed builds from the config, or why it refuses.
#include "harness/scenario/deepspeed_sections.h"

#include <cmath>
#include <limits>

namespace trainrepro::deepspeed_sections {
namespace {

// OneCycle(optimizer, cycle_min_lr, cycle_max_lr, **the rest): what Python or the class refuses
// is returned in their words; the values land in `cycle`.
std::optional<std::string> read_one_cycle(const nlohmann::json& raw_params, ObjectReader& params,
                                          const DeepSpeedRelease& release, DeepSpeedConfig& result,
                                          OneCycleParams& cycle) {
  static const std::vector<std::string> keywords = {"cycle_min_lr",
                                                    "cycle_max_lr",
                                                    "decay_lr_rate",
                                                    "cycle_first_step_size",
                                                    "cycle_second_step_size",
                                                    "cycle_first_stair_count",
                                                    "cycle_second_stair_count",
                                                    "decay_step_size",
                                                    "cycle_momentum",
                                                    "cycle_min_mom",
                                                    "cycle_max_mom",
                                                    "decay_mom_rate",
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
    return "TypeError: OneCycle.__init__() missing 2 required positional arguments: " + missing[0] +
           " and " + missing[1];
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
    schedule.warmup_num_steps =
        params.required_int("warmup_num_steps", std::numeric_limits<int64_t>::min());
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

}  // namespace

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
      "LRRangeTest",      "LambdaLR",
      "MultiplicativeLR", "StepLR",
      "MultiStepLR",      "ConstantLR",
      "LinearLR",         "ExponentialLR",
      "SequentialLR",     "CosineAnnealingLR",
      "ChainedScheduler", "ReduceLROnPlateau",
      "CyclicLR",         "CosineAnnealingWarmRestarts",
      "OneCycleLR",       "PolynomialLR"};
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
                                     "cos_min_ratio",   "warmup_type",      "last_batch_iteration"}
             : std::set<std::string>{"total_num_steps",  "warmup_min_lr", "warmup_max_lr",
                                     "warmup_num_steps", "warmup_type",   "last_batch_iteration"};
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
    schedule.construction_rate_first_group_only = release.cosine_construction_rate_first_group_only;
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

}  // namespace trainrepro::deepspeed_sections
