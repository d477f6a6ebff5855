#include "harness/scenario/plan.h"

namespace trainrepro {

namespace {

// deepspeed.initialize, then the loop's first backward (runtime/engine.py).
std::optional<ConfigError> check_initialize(const Scenario& scenario) {
  const DeepSpeedConfig& config = scenario.deepspeed;
  if (config.optimizer_refused) return config.optimizer_refused;
  // runtime/zero/utils.py ZERO_SUPPORTED_OPTIMIZERS: torch's Adam and AdamW and DeepSpeed's
  // fused and CPU Adam are tested; torch.optim.SGD is not.
  if (config.zero_stage >= 1 && config.optimizer->kind == OptimizerKind::sgd &&
      !config.zero_allow_untested_optimizer) {
    return ConfigError{ConfigErrorKind::untested_zero_optimizer,
                       "AssertionError: You are using an untested ZeRO Optimizer. Please add "
                       "<\"zero_allow_untested_optimizer\": true> in the configuration file to "
                       "use it."};
  }
  // The optimizer first, then the scheduler built on it (engine.py _configure_lr_scheduler).
  if (config.scheduler_refused) return config.scheduler_refused;
  const LoopSpec& loop = scenario.loop;
  if (loop.loss_scaling == LossScalingHabit::none && loop.forward == ForwardHabit::engine &&
      config.release->direct_backward_hooked && config.zero_stage == 0) {
    return ConfigError{
        ConfigErrorKind::direct_backward_unsupported,
        "RuntimeError: Direct calls to tensor.backward() are not supported in this "
        "configuration. This occurs when either: (1) your PyTorch version lacks required "
        "internal APIs, or (2) using ZeRO stage 0. Please use engine.backward(loss) instead. "
        "(DeepSpeed " +
            config.release->version +
            " hooks the outputs of engine(x); a forward through engine.module(x) bypasses it)"};
  }
  return std::nullopt;
}

}  // namespace

BatchResolution resolve_deepspeed_config(const DeepSpeedConfig& config, int64_t world_size) {
  if (config.refused_while_reading) return *config.refused_while_reading;
  if (config.fp16_enabled && config.bf16_enabled) {
    return ConfigError{ConfigErrorKind::fp16_and_bf16_both_enabled,
                       "bfloat16 and fp16 modes cannot be simultaneously enabled"};
  }
  return resolve_batch_config(config.batch, world_size);
}

PlanResolution resolve_plan(const Scenario& scenario, Device device) {
  const DeepSpeedConfig& config = scenario.deepspeed;
  BatchResolution batch = resolve_deepspeed_config(config, scenario.world_size);
  if (auto* error = std::get_if<ConfigError>(&batch)) return *error;
  if (auto error = check_initialize(scenario)) return *error;

  Plan plan;
  plan.batch = std::get<ResolvedBatch>(batch);
  plan.device = device;
  plan.dtype = scenario.dtype;
  plan.precision = config.fp16_enabled   ? Precision::fp16
                   : config.bf16_enabled ? Precision::bf16
                                         : Precision::fp32;
  plan.zero_stage = config.zero_stage;
  plan.optimizer = *config.optimizer;  // check_initialize refused the names it cannot build
  plan.lr_schedule = config.scheduler;
  plan.gradient_clipping = config.gradient_clipping;
  plan.managed_gradient_accumulation = config.managed_gradient_accumulation;
  plan.direct_backward_through_engine = scenario.loop.forward == ForwardHabit::engine &&
                                        config.release->direct_backward_hooked &&
                                        config.zero_stage >= 1;
  plan.deepspeed_version = config.release->version;
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
