#include "harness/scenario/plan.h"

namespace trainrepro {

namespace {
constexpr int64_t kMaxZeroStage = 3;
}  // namespace

BatchResolution resolve_deepspeed_config(const DeepSpeedConfig& config, int64_t world_size) {
  if (config.fp16_enabled && config.bf16_enabled) {
    return ConfigError{ConfigErrorKind::fp16_and_bf16_both_enabled,
                       "bfloat16 and fp16 modes cannot be simultaneously enabled"};
  }
  BatchResolution batch = resolve_batch_config(config.batch, world_size);
  if (std::holds_alternative<ConfigError>(batch)) return batch;
  // DeepSpeed checks the stage only when ZeRO is enabled, i.e. stage > 0.
  if (config.zero_stage > kMaxZeroStage) {
    return ConfigError{
        ConfigErrorKind::zero_stage_unsupported,
        "DeepSpeedConfig: Maximum supported ZeRO stage is " + std::to_string(kMaxZeroStage)};
  }
  return batch;
}

PlanResolution resolve_plan(const Scenario& scenario, Device device) {
  const DeepSpeedConfig& config = scenario.deepspeed;
  BatchResolution batch = resolve_deepspeed_config(config, scenario.world_size);
  if (auto* error = std::get_if<ConfigError>(&batch)) return *error;

  Plan plan;
  plan.batch = std::get<ResolvedBatch>(batch);
  plan.device = device;
  plan.dtype = scenario.dtype;
  plan.precision = config.fp16_enabled   ? Precision::fp16
                   : config.bf16_enabled ? Precision::bf16
                                         : Precision::fp32;
  plan.zero_stage = config.zero_stage;
  plan.optimizer = *config.optimizer;  // load_scenario guarantees one
  plan.gradient_clipping = config.gradient_clipping;
  plan.golden = scenario.golden;
  return plan;
}

const char* device_name(Device device) { return device == Device::cuda ? "cuda" : "cpu"; }

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    default:
      return "fp32";
  }
}

}  // namespace trainrepro
