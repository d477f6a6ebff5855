#include "harness/scenario/plan.h"

#include <map>
#include <string>

namespace trainrepro {

namespace {

// The loop's engine.no_sync() (runtime/engine.py, 0.16.0 on, the same in every release this
// harness knows): it asserts at entry when ZeRO partitions gradients (stages 2-3), and at
// stage 1 a boundary backward inside it skips the reduction that fills the optimizer's
// averaged gradients, which engine.step() then reads (measured on 0.19.8, 1 and 2 ranks).
std::optional<ConfigError> check_no_sync(const Scenario& scenario, int64_t gas) {
  // The boundary's backward inside no_sync() is the only way this loop enters it at all.
  if (!boundary_unsynced(scenario.loop.gradient_sync, gas)) return std::nullopt;
  const int stage = scenario.deepspeed.zero_stage;
  if (stage >= 2) {
    return ConfigError{
        ConfigErrorKind::no_sync_with_partitioned_gradients,
        "AssertionError: no_sync context manager is incompatible with gradient partitioning "
        "logic of ZeRO stage " + std::to_string(stage) +
            " (raised at the loop's first `with engine.no_sync():`: ZeRO 2-3 reduce-scatter "
            "gradients inside every backward. Remove no_sync; DeepSpeed already reduces only "
            "what the stage needs)"};
  }
  if (stage == 1) {
    return ConfigError{
        ConfigErrorKind::no_sync_boundary_at_zero_stage_1,
        "KeyError: 0 (raised by engine.step() at the first boundary: the boundary's backward "
        "ran inside engine.no_sync(), so ZeRO stage 1 never reduced the gradients its "
        "optimizer steps on. Take the window's last backward out of no_sync(), or remove "
        "no_sync: DeepSpeed reduces only at the boundary anyway)"};
  }
  return std::nullopt;
}

// deepspeed.initialize, then the loop's first backward (runtime/engine.py).
std::optional<ConfigError> check_initialize(const Scenario& scenario) {
  const DeepSpeedConfig& config = scenario.deepspeed;
  if (config.optimizer_refused) return config.optimizer_refused;
  const OptimizerKind optimizer = config.optimizer->kind;
  // engine.py _configure_optimizer: with the optimizer offloaded, a client optimizer must be
  // DeepSpeed's CPU Adam (or CPU Lion) unless the config sets zero_force_ds_cpu_optimizer false.
  // Under the Trainer, accelerate (Accelerator._prepare_deepspeed) swaps torch's AdamW for
  // DeepSpeedCPUAdam first, so only a script's own optimizer meets this.
  if (config.client_optimizer && !scenario.trainer && config.offload_optimizer_device != "none" &&
      config.zero_force_ds_cpu_optimizer) {
    return ConfigError{
        ConfigErrorKind::client_optimizer_with_offload,
        "ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer "
        "(torch.optim." + config.optimizer->type_as_written +
            ") … (raised by deepspeed.initialize: with offload_optimizer on \"" +
            config.offload_optimizer_device +
            "\" DeepSpeed takes only its own DeepSpeedCPUAdam from the script; remove "
            "client_optimizer and put the optimizer in the config, or set "
            "\"zero_force_ds_cpu_optimizer\": false)"};
  }
  // _do_sanity_check reads the "fp16" block's loss_scale whether fp16 is enabled or not.
  if (optimizer == OptimizerKind::lamb && config.fp16.loss_scale > 0.0) {
    return ConfigError{ConfigErrorKind::optimizer_invalid,
                       "AssertionError: DeepSpeed lamb optimizer requires dynamic loss scaling"};
  }
  // runtime/zero/utils.py ZERO_SUPPORTED_OPTIMIZERS: torch's Adam and AdamW and DeepSpeed's
  // fused and CPU Adam are tested; torch.optim.SGD and FusedLamb are not.
  if (config.zero_stage >= 1 &&
      (optimizer == OptimizerKind::sgd || optimizer == OptimizerKind::lamb) &&
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
  // accelerate's DeepSpeedEngineWrapper.backward (1.8.0+) calls
  // engine.set_gradient_accumulation_boundary before the Trainer's first backward, and
  // runtime/engine.py set_gradient_accumulation_boundary asserts managed accumulation (0.19.4+).
  if (scenario.trainer && scenario.trainer->explicit_boundary &&
      !config.managed_gradient_accumulation) {
    return ConfigError{
        ConfigErrorKind::boundary_with_unmanaged_accumulation,
        "AssertionError: set_gradient_accumulation_boundary() is not supported with "
        "managed_gradient_accumulation=False; the caller owns the boundary by calling step() "
        "(raised at the Trainer's first backward: accelerate " +
            scenario.trainer->accelerate_version +
            " hands DeepSpeed the Trainer's boundary before every backward. The Trainer manages "
            "the window itself: remove \"managed_gradient_accumulation\": false)"};
  }
  return std::nullopt;
}

// How Python prints the dtype, in DeepSpeed's own messages.
std::string torch_dtype_name(Precision precision) {
  static const std::map<std::string, std::string> torch_names = {
      {"fp16", "float16"}, {"bf16", "bfloat16"}, {"fp32", "float32"}};
  return "torch." + torch_names.at(precision_name(precision));
}

// engine.py get_data_types: the accumulation dtype a config gets when it names none.
Precision grad_accum_dtype_of(const DeepSpeedConfig& config, Precision model) {
  if (config.grad_accum_dtype) return *config.grad_accum_dtype;
  if (model == Precision::bf16 && config.zero_stage == 0 &&
      config.release->bf16_without_zero_accumulates_in_fp32) {
    return Precision::fp32;
  }
  return model;
}

// engine.py _do_optimizer_sanity_check: which optimizer wrapper the dtypes get, or DeepSpeed's
// NotImplementedError for a mix it refuses. Fills `mixed` for the wrappers the engine runs.
std::optional<ConfigError> choose_precision_wrapper(const DeepSpeedConfig& config,
                                                    Precision model, MixedPrecisionPlan& mixed) {
  const Precision accumulation = grad_accum_dtype_of(config, model);
  const bool old_release = config.release->bf16_without_zero_accumulates_in_fp32;
  mixed.fp16 = config.fp16;
  mixed.accumulate_in_fp32 = model != Precision::fp32 && accumulation == Precision::fp32;
  if (config.zero_stage >= 1) {
    // ZeRO's optimizers; at stage 1, bf16 with fp32 accumulation gets BF16_Optimizer instead.
    const bool bf16_optimizer = model == Precision::bf16 && accumulation == Precision::fp32 &&
                                config.zero_stage == 1;
    mixed.scaler = LossScalerKind::zero_dynamic;
    mixed.check_overflow = model != Precision::bf16 || bf16_optimizer ||
                           config.bf16_check_grad_overflow;
    return std::nullopt;
  }
  mixed.scaler = LossScalerKind::fp16_optimizer;
  mixed.check_overflow = true;
  // FP16_Optimizer (runtime/fp16/fused_optimizer.py and unfused_optimizer.py
  // initialize_optimizer_states); BF16_Optimizer, below, does not step at initialization.
  mixed.optimizer_steps_at_initialization = model != Precision::fp32 && model == accumulation;
  if (model == accumulation) {
    if (model == Precision::bf16 && old_release) {
      return ConfigError{ConfigErrorKind::unsupported_precision_mix,
                         "NotImplementedError: Bfloat16 wrapper must use a gradient accumulation "
                         "type of fp32, enable ZeRO to use Bfloat16 gradient accumulation"};
    }
    return std::nullopt;
  }
  if (old_release && model == Precision::bf16 && accumulation == Precision::fp32) {
    return std::nullopt;  // BF16_Optimizer
  }
  return ConfigError{ConfigErrorKind::unsupported_precision_mix,
                     old_release ? std::string("NotImplementedError: unsupported mix of model "
                                               "dtype and gradient accumulation type")
                                 : std::string("NotImplementedError: unsupported mix of "
                                               "model_dtype=") +
                                       torch_dtype_name(model) +
                                       " and grad_accum_dtype=" + torch_dtype_name(accumulation)};
}

}  // namespace

BatchResolution resolve_deepspeed_config(const DeepSpeedConfig& config, int64_t world_size) {
  if (config.refused_while_reading) return *config.refused_while_reading;
  if (config.fp16_enabled && config.bf16_enabled) {
    return ConfigError{ConfigErrorKind::fp16_and_bf16_both_enabled,
                       "bfloat16 and fp16 modes cannot be simultaneously enabled"};
  }
  if (config.precision_refused) return *config.precision_refused;
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
  if (auto error = choose_precision_wrapper(config, plan.precision, plan.mixed)) return *error;
  // Initialize has succeeded; the loop's no_sync() fails later, at its first entry or step.
  if (auto error = check_no_sync(scenario, plan.batch.gradient_accumulation_steps)) return *error;
  plan.zero_stage = config.zero_stage;
  plan.zero3_param_persistence_threshold = config.zero3_param_persistence_threshold;
  plan.optimizer = *config.optimizer;  // check_initialize refused the names it cannot build
  plan.lr_schedule = config.scheduler;
  plan.gradient_clipping = config.gradient_clipping;
  plan.managed_gradient_accumulation = config.managed_gradient_accumulation;
  plan.direct_backward_through_engine = scenario.loop.forward == ForwardHabit::engine &&
                                        config.release->direct_backward_hooked &&
                                        config.zero_stage >= 1;
  plan.deepspeed_version = config.release->version;
  plan.trainer = scenario.trainer;
  plan.golden = scenario.golden;
  return plan;
}

int64_t accumulation_window(const Plan& plan) {
  if (plan.trainer && plan.trainer->explicit_boundary) {
    return plan.trainer->gradient_accumulation_steps;
  }
  return plan.batch.gradient_accumulation_steps;
}

int64_t micro_batches_per_window(const Plan& plan) {
  return plan.trainer ? plan.trainer->gradient_accumulation_steps
                      : plan.batch.gradient_accumulation_steps;
}

int64_t effective_train_batch(const Plan& plan) {
  return plan.batch.micro_batch_per_gpu * accumulation_window(plan) * plan.batch.world_size;
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
