// "zero_optimization": the ZeRO stage and the settings DeepSpeedZeroConfig validates.
#include "harness/scenario/deepspeed_sections.h"

#include <cmath>

namespace trainrepro::deepspeed_sections {
namespace {

// "stage3_param_persistence_threshold" (the alias DeepSpeed's docs use) or
// "param_persistence_threshold" (the pydantic field's own name, also accepted): an integer >= 0
// in pydantic's lax mode (1e5 from a JSON file is the float 100000.0, which pydantic takes as an
// int because it has no fraction). Anything else is DeepSpeedZeroConfig's ValidationError.
void read_param_persistence_threshold(ObjectReader& zero, ModelRefusal& refusal,
                                      DeepSpeedConfig& result) {
  for (const std::string key :
       {"stage3_param_persistence_threshold", "param_persistence_threshold"}) {
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
                    ", input_value=" + python_repr(value) +
                    ", input_type=" + python_type_name(value) + "]"});
    } else if (*written < 0) {
      refusal.errors.push_back({key,
                                "Input should be greater than or equal to 0 "
                                "[type=greater_than_equal, input_value=" +
                                    python_repr(value) + ", input_type=" + python_type_name(value) +
                                    "]"});
    } else {
      result.zero3_param_persistence_threshold = *written;
    }
  }
}

}  // namespace

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
      refusal.errors.push_back(
          {"stage", "Input should be 0, 1, 2, 3 or 3 [type=enum, input_value=" +
                        python_repr(stage) + ", input_type=" + python_type_name(stage) + "]"});
      refusal.kind = ConfigErrorKind::zero_stage_unsupported;
      refusal.notes.push_back("DeepSpeed's maximum ZeRO stage is 3");
    } else {
      result.zero_stage = *written;
    }
  }
  read_param_persistence_threshold(zero, refusal, result);
  // Every key but the stage and the persistence threshold is ignored here (warned about before
  // the offload sections are looked into, which would count them as read).
  const std::vector<std::string> outside =
      keys_outside_schema(release, "/zero_optimization", value);
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

}  // namespace trainrepro::deepspeed_sections
