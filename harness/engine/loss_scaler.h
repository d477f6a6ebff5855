// DeepSpeed's fp16 loss scale, updated once per boundary after the overflow check. Two
// scalers, as DeepSpeed has them (see LossScalerKind): FP16_Optimizer's at ZeRO stage 0 and
// DynamicLossScaler at stages 1-3. Both raise the scale by 2 after loss_scale_window steps
// without overflow and halve it on an overflow (never below min_loss_scale); a static
// "loss_scale" never changes; bf16 has no scale (1).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "harness/scenario/plan.h"

namespace trainrepro {

// DynamicLossScaler's exception at the minimum scale: DeepSpeed ends the run with it.
class LossScaleAtMinimum : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LossScaler {
 public:
  explicit LossScaler(const Plan& plan);

  // The scale the loss is multiplied by before backward (1 without fp16).
  double scale() const { return scale_; }
  bool scales() const { return scales_; }
  // What DeepSpeed does with the boundary's overflow check, before it unscales: returns the
  // line DeepSpeed logs ("[deepspeed] OVERFLOW! Rank 0 Skipping step. …"), empty when it logs
  // nothing. Throws LossScaleAtMinimum where DynamicLossScaler raises.
  std::string update(bool overflow);
  // Puts the scale where another run had it (the precision twin follows the judged run's
  // scales window by window; see ReferenceEngine::loss_scales_to_follow).
  void set_scale(double scale) { scale_ = scale; }

 private:
  bool scales_ = false;   // fp16
  bool dynamic_ = false;  // fp16 with loss_scale 0
  LossScalerKind kind_ = LossScalerKind::fp16_optimizer;
  double scale_ = 1.0;
  int64_t window_ = 1000;
  double min_scale_ = 1.0;
  int64_t delayed_shift_ = 2;  // "hysteresis"
  int64_t hysteresis_left_ = 2;
  bool consecutive_hysteresis_ = false;
  int64_t iteration_ = 0;
  int64_t last_overflow_iteration_ = -1;
};

}  // namespace trainrepro
