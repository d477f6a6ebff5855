// Mixed precision as a DeepSpeed config asks for it ("fp16", "bf16", "data_types") and as the
// engine runs it. The model computes in fp16 or bf16; the optimizer updates float32 master
// weights; fp16 multiplies the loss by a loss scale so small gradients survive, and every
// boundary whose gradients overflowed is skipped. Semantics of DeepSpeed 0.19.8 (and 0.16.9
// where noted): runtime/precision_config.py, runtime/fp16/{fused_optimizer,loss_scaler}.py,
// runtime/bf16_optimizer.py, runtime/zero/stage_1_and_2.py, runtime/engine.py
// _do_optimizer_sanity_check.
#pragma once
#include <cmath>
#include <cstdint>

namespace trainrepro {

enum class Precision { fp32, fp16, bf16 };

// The "fp16" block (DeepSpeedFP16Config), with its defaults.
struct Fp16Config {
  double loss_scale = 0.0;  // 0: dynamic loss scaling; > 0: this static scale
  int64_t initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int64_t hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
};

// Which of DeepSpeed's loss scalers the engine's optimizer wrapper uses.
enum class LossScalerKind {
  // ZeRO stage 0: FP16_Optimizer's own _update_scale. No hysteresis (the "hysteresis" key is
  // read but unused), and at min_loss_scale it keeps skipping without raising.
  fp16_optimizer,
  // ZeRO stages 1-3: DynamicLossScaler. Hysteresis delays each decrease; at min_loss_scale an
  // overflow raises "Current loss scale already at minimum - cannot decrease scale anymore".
  zero_dynamic,
};

// What a Plan says about mixed precision (precision fp16 or bf16 only).
struct MixedPrecisionPlan {
  Fp16Config fp16;  // fp16 only; bf16 never scales the loss
  LossScalerKind scaler = LossScalerKind::fp16_optimizer;
  // Gradients accumulate across micro-steps in float32 (BF16_Optimizer) instead of in the
  // model's dtype.
  bool accumulate_in_fp32 = false;
  // Non-finite gradients skip the step (always for fp16; bf16 "check_grad_overflow").
  bool check_overflow = true;
  // ZeRO stage 0's FP16_Optimizer (fp16, and bf16 accumulated in bf16) steps the wrapped
  // optimizer once with zero gradients when it is built (initialize_optimizer_states): Adam's
  // step count starts at 1, so the first real update uses the bias correction of step 2, and
  // weight decay shrinks the master weights once. BF16_Optimizer and ZeRO 1-3 do not
  // (DeepSpeed PR #5104, "Remove optimizer step on initialization", removed it from those two
  // in 0.13.2 and left FP16_Optimizer as it was).
  bool optimizer_steps_at_initialization = false;
  // Every fp16 optimizer of DeepSpeed 0.19.8 (FP16_Optimizer, FP16_UnfusedOptimizer, ZeRO 1-3)
  // calls _update_scale before unscale_and_clip_grads: on a step where the scale grows (after
  // loss_scale_window clean steps) the gradients, computed with scale S, are divided by 2S, so
  // that update uses half the gradient. A correct run (the precision twin) divides by S.
  bool unscales_with_updated_scale = true;
};

// PyTorch's rule for judging low precision against a float64 reference (torch._dynamo.utils
// same(): res_error <= multiplier * ref_error + tol / 10): a run passes when its RMS error
// against the float64 golden is within this factor of the precision twin's RMS error.
constexpr double kPrecisionTwinFactor = 2.0;
// tol / 10 of that rule, with tol torch.testing's default atol for float16 and bfloat16.
constexpr double kPrecisionTwinFloor = 1e-6;

// Half the distance between neighbouring numbers near 1: fp16 keeps 11 significant bits,
// bf16 8.
inline double unit_roundoff(Precision precision) {
  switch (precision) {
    case Precision::fp16:
      return std::ldexp(1.0, -11);
    case Precision::bf16:
      return std::ldexp(1.0, -8);
    default:
      return std::ldexp(1.0, -24);
  }
}

// The relative error a low-precision run that follows a prediction may show against it: its
// precision twin's, plus one rounding of the running sum per micro-step, random in sign
// (sqrt(micro_steps) unit roundoffs), which the unaccumulated twin never does.
inline double accumulation_noise(double twin_relative_error, int64_t micro_steps,
                                 Precision precision) {
  return twin_relative_error +
         std::sqrt(static_cast<double>(micro_steps)) * unit_roundoff(precision);
}

}  // namespace trainrepro
