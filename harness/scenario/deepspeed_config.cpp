// The DeepSpeed config's top level: the removed keys refused first, the batch keys, the keys
// warned about, and each section handed to its reader (deepspeed_sections.h).
#include "harness/scenario/deepspeed_config.h"

#include <optional>
#include <set>

#include "harness/json/scenario_error.h"
#include "harness/scenario/deepspeed_sections.h"

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

// A batch key: absent or null reads as "not given", as DeepSpeed's `dict.get(key, None)`.
std::optional<int64_t> read_batch_key(ObjectReader& section, const std::string& key) {
  section.note_known(key);
  if (!section.has(key)) return std::nullopt;
  const nlohmann::json& value = section.required_value(key);
  if (value.is_null()) return std::nullopt;
  if (deepspeed_sections::is_auto(value)) deepspeed_sections::fail_on_auto(section, key);
  // Beyond 2^40 the products MB * GAS * world size could overflow; no real batch is that big.
  constexpr int64_t kLargest = int64_t{1} << 40;
  if (!value.is_number_integer() || value.get<int64_t>() > kLargest ||
      value.get<int64_t>() < -kLargest) {
    section.fail(key, "expected an integer or null, found " + describe_json_value(value));
  }
  return value.get<int64_t>();
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
    note +=
        "; partition_activations splits each checkpointed input across the model-parallel "
        "ranks: these runs are data-parallel only (model-parallel size 1, where DeepSpeed "
        "keeps a whole copy), so it changes nothing";
  }
  if (on("cpu_checkpointing")) {
    note +=
        "; cpu_checkpointing keeps the checkpointed inputs in host memory: nothing changes on "
        "a CPU run; on CUDA the reference engine keeps them on the GPU, so its device peak "
        "exceeds DeepSpeed's by those inputs";
  }
  if (on("contiguous_memory_optimization")) {
    note +=
        "; contiguous_memory_optimization copies them into one preallocated buffer (a "
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
  deepspeed_sections::read_zero_optimization(section, release, result);
  result.batch.train_batch_size = read_batch_key(section, "train_batch_size");
  result.batch.micro_batch_per_gpu = read_batch_key(section, "train_micro_batch_size_per_gpu");
  result.batch.gradient_accumulation_steps = read_batch_key(section, "gradient_accumulation_steps");

  section.note_known("optimizer");
  if (section.has("optimizer")) deepspeed_sections::read_optimizer(section, release, result);
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
  if (section.has("scheduler")) deepspeed_sections::read_scheduler(section, release, result);

  deepspeed_sections::read_precision(section, release, result);
  warn_about_top_level_keys(section, release, result.warnings);
}

}  // namespace

const EnumSpellings<OptimizerKind>& optimizer_spellings() {
  static const EnumSpellings<OptimizerKind> spellings = {{OptimizerKind::sgd, "SGD"},
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