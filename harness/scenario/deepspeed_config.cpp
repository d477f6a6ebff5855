#include "harness/scenario/deepspeed_config.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "harness/scenario/scenario_error.h"

namespace trainrepro {
namespace {

// Keys that change nothing trainrepro measures (logging, monitoring, profiling): accepted
// without a warning so that real configs do not drown the one warning that matters.
const std::set<std::string>& keys_without_numerical_effect() {
  static const std::set<std::string> keys = {"steps_per_print", "wall_clock_breakdown",
                                             "dump_state",      "memory_breakdown",
                                             "tensorboard",     "wandb",
                                             "csv_monitor",     "comet",
                                             "comms_logger",    "flops_profiler",
                                             "logging",         "zero_allow_untested_optimizer"};
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

OptimizerConfig read_optimizer(ObjectReader& section, std::vector<std::string>& warnings) {
  ObjectReader block = section.required_object("optimizer");
  OptimizerConfig optimizer;
  optimizer.type_as_written = block.required_string("type");
  // DeepSpeed matches its own optimizer names case-insensitively.
  const std::string type = lowercase(optimizer.type_as_written);
  if (type == "adam") {
    optimizer.kind = OptimizerKind::adam;
  } else if (type == "adamw") {
    optimizer.kind = OptimizerKind::adamw;
  } else if (type == "sgd") {
    optimizer.kind = OptimizerKind::sgd;
  } else {
    block.fail("type", "optimizer \"" + optimizer.type_as_written +
                           "\" is not implemented by the reference engine (implemented: "
                           "\"Adam\", \"AdamW\", \"SGD\")");
  }

  ObjectReader params = block.optional_object("params");
  optimizer.lr = params.optional_number("lr", optimizer.lr, 0.0);
  optimizer.weight_decay = params.optional_number("weight_decay", 0.0, 0.0);
  if (optimizer.kind == OptimizerKind::sgd) {
    optimizer.momentum = params.optional_number("momentum", 0.0, 0.0);
    optimizer.dampening = params.optional_number("dampening", 0.0, 0.0);
    optimizer.nesterov = params.optional_bool("nesterov", false);
  } else {
    if (params.has("betas")) {
      const nlohmann::json& betas = params.required_value("betas");
      if (!betas.is_array() || betas.size() != 2 || !betas[0].is_number() ||
          !betas[1].is_number()) {
        params.fail("betas",
                    "expected two numbers [beta1, beta2], found " + describe_json_value(betas));
      }
      optimizer.beta1 = betas[0].get<double>();
      optimizer.beta2 = betas[1].get<double>();
    }
    optimizer.eps = params.optional_number("eps", optimizer.eps, 0.0);
    const bool adam_w_mode = params.optional_bool("adam_w_mode", true);
    optimizer.decoupled_weight_decay = optimizer.kind == OptimizerKind::adamw || adam_w_mode;
    params.optional_bool("torch_adam", false);  // which kernel, not which mathematics
  }
  warn_about_unread_keys(params,
                         "optimizer parameter not implemented by the reference engine; "
                         "ignored",
                         warnings);
  warn_about_unread_keys(block, "not implemented by the reference engine; ignored", warnings);
  return optimizer;
}

}  // namespace

const EnumSpellings<OptimizerKind>& optimizer_spellings() {
  static const EnumSpellings<OptimizerKind> spellings = {
      {OptimizerKind::sgd, "SGD"}, {OptimizerKind::adam, "Adam"}, {OptimizerKind::adamw, "AdamW"}};
  return spellings;
}

DeepSpeedConfig read_deepspeed_config(const nlohmann::json& config, const std::string& file,
                                      const std::string& pointer) {
  ObjectReader section(config, file, pointer);
  DeepSpeedConfig result;
  result.verbatim = config;

  result.batch.train_batch_size = read_batch_key(section, "train_batch_size");
  result.batch.micro_batch_per_gpu = read_batch_key(section, "train_micro_batch_size_per_gpu");
  result.batch.gradient_accumulation_steps = read_batch_key(section, "gradient_accumulation_steps");

  section.note_known("optimizer");
  if (section.has("optimizer")) result.optimizer = read_optimizer(section, result.warnings);
  result.gradient_clipping = section.optional_number("gradient_clipping", 0.0, 0.0);

  // Range checks on the stage belong to DeepSpeed's sanity check (a named config error).
  ObjectReader zero = section.optional_object("zero_optimization");
  result.zero_stage = zero.optional_int("stage", 0, 0);
  warn_about_unread_keys(zero, "ZeRO option not implemented by the reference engine; ignored",
                         result.warnings);

  ObjectReader fp16 = section.optional_object("fp16");
  result.fp16_enabled = read_enabled_flag(fp16, "enabled");
  warn_about_unread_keys(fp16, "fp16 option not implemented by the reference engine; ignored",
                         result.warnings);

  // DeepSpeed still accepts the old spelling "bfloat16" for "bf16".
  const std::string bf16_key =
      section.has("bfloat16") && !section.has("bf16") ? "bfloat16" : "bf16";
  ObjectReader bf16 = section.optional_object(bf16_key);
  result.bf16_enabled = read_enabled_flag(bf16, "enabled");
  warn_about_unread_keys(bf16, "bf16 option not implemented by the reference engine; ignored",
                         result.warnings);

  warn_about_unread_keys(section,
                         "not implemented by the reference engine; ignored (the run may differ "
                         "from DeepSpeed's where this key matters)",
                         result.warnings, keys_without_numerical_effect());
  return result;
}

}  // namespace trainrepro
