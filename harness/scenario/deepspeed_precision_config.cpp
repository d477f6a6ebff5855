// "fp16", "bf16" and "data_types": the precision DeepSpeed trains in and its loss scaler.
#include "harness/scenario/deepspeed_sections.h"

#include <limits>

namespace trainrepro::deepspeed_sections {
namespace {

bool read_enabled_flag(ObjectReader& section, const std::string& key) {
  if (section.has(key) && is_auto(section.required_value(key))) fail_on_auto(section, key);
  return section.optional_bool(key, false);
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
    fp16.fail("initial_scale_power",
              "expected at most 1023 (2**power must be a finite float), "
              "found " +
                  std::to_string(config.initial_scale_power));
  }
  config.loss_scale_window =
      fp16.optional_int("loss_scale_window", 1000, std::numeric_limits<int64_t>::min());
  config.hysteresis = fp16.optional_int("hysteresis", 2, std::numeric_limits<int64_t>::min());
  config.consecutive_hysteresis = fp16.optional_bool("consecutive_hysteresis", false);
  config.min_loss_scale = fp16.optional_number("min_loss_scale", 1.0, lowest);
  if (result.fp16_enabled && config.loss_scale == 0.0) {
    if (config.loss_scale_window <= 0) {
      refuse_precision(result,
                       "fp16.loss_scale_window must be > 0 when dynamic loss scaling is "
                       "enabled (loss_scale=0)");
    }
    if (config.min_loss_scale <= 0.0) {
      refuse_precision(result,
                       "fp16.min_loss_scale must be > 0 when dynamic loss scaling is "
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
        {"torch.float32", Precision::fp32},  {"fp32", Precision::fp32},
        {"float32", Precision::fp32},        {"float", Precision::fp32},
        {"torch.float16", Precision::fp16},  {"fp16", Precision::fp16},
        {"float16", Precision::fp16},        {"half", Precision::fp16},
        {"torch.bfloat16", Precision::bf16}, {"bf16", Precision::bf16},
        {"bfloat16", Precision::bf16}};
    for (const auto& [spelling, precision] : spellings) {
      if (dtype == spelling) result.grad_accum_dtype = precision;
    }
    if (!result.grad_accum_dtype) {
      data_types.fail("grad_accum_dtype",
                      "expected one of DeepSpeed's dtype names (fp32, float32, float, fp16, "
                      "float16, half, bf16, bfloat16, torch.float32, torch.float16, "
                      "torch.bfloat16), found \"" +
                          dtype + "\"");
    }
  }
  warn_about_unread_keys(data_types,
                         "data_types option not implemented by the reference engine; ignored",
                         result.warnings);
}

}  // namespace

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
  check_validated_section(
      bf16, release, "/bf16",
      section.has(bf16_key) ? section.required_value(bf16_key) : nlohmann::json(),
      "bf16 option not implemented by the reference engine; ignored", result);
  read_data_types(section, result);
}

}  // namespace trainrepro::deepspeed_sections
