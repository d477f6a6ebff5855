#include "harness/engine/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainrepro {
namespace {

std::string integer_text(double value) {
  char text[48];
  std::snprintf(text, sizeof text, "%.0f", std::trunc(value));
  return text;
}

}  // namespace

LossScaler::LossScaler(const Plan& plan) {
  if (plan.precision != Precision::fp16) return;
  const Fp16Config& fp16 = plan.mixed.fp16;
  scales_ = true;
  kind_ = plan.mixed.scaler;
  dynamic_ = fp16.loss_scale == 0.0;
  scale_ = dynamic_ ? std::ldexp(1.0, static_cast<int>(fp16.initial_scale_power)) : fp16.loss_scale;
  window_ = fp16.loss_scale_window;
  min_scale_ = fp16.min_loss_scale;
  delayed_shift_ = fp16.hysteresis;
  hysteresis_left_ = fp16.hysteresis;
  consecutive_hysteresis_ = fp16.consecutive_hysteresis;
}

std::string LossScaler::update(bool overflow) {
  std::string line;
  if (!scales_) {
    // bf16 (FP16_Optimizer in bf16, BF16_Optimizer, ZeRO): the step is skipped without a scale.
    if (overflow) line = "[deepspeed] OVERFLOW! Skipping step. Gradients are non-finite, weights "
                         "were not updated.";
    return line;
  }
  if (!dynamic_) {
    if (overflow) {
      line = "Grad overflow on iteration: " + std::to_string(iteration_) +
             "; using static loss scale of: " + integer_text(scale_);
    }
    ++iteration_;
    return line;
  }
  if (overflow) {
    // FP16_Optimizer (stage 0) halves at once; DynamicLossScaler spends its hysteresis first.
    const bool decrease = kind_ == LossScalerKind::fp16_optimizer || delayed_shift_ == 1 ||
                          hysteresis_left_ == 1;
    if (decrease) {
      if (kind_ == LossScalerKind::zero_dynamic && scale_ == min_scale_) {
        throw LossScaleAtMinimum(
            "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.");
      }
      const double next = std::max(scale_ / 2.0, min_scale_);
      line = kind_ == LossScalerKind::fp16_optimizer
                 ? "Grad overflow on iteration " + std::to_string(iteration_) +
                       ". Reducing dynamic loss scale from " + integer_text(scale_) + " to " +
                       integer_text(next)
                 : "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: " +
                       integer_text(scale_) + ", reducing to " + integer_text(next);
      scale_ = next;
    } else {
      line = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: " +
             integer_text(scale_) + ", but hysteresis is " + std::to_string(hysteresis_left_) +
             ". Reducing hysteresis to " + std::to_string(hysteresis_left_ - 1);
      --hysteresis_left_;
    }
    last_overflow_iteration_ = iteration_;
  } else {
    if (kind_ == LossScalerKind::zero_dynamic && consecutive_hysteresis_) {
      hysteresis_left_ = delayed_shift_;
    }
    const int64_t stable_interval = iteration_ - last_overflow_iteration_ - 1;
    if (stable_interval > 0 && stable_interval % window_ == 0) {
      if (kind_ == LossScalerKind::zero_dynamic && !consecutive_hysteresis_) {
        hysteresis_left_ = delayed_shift_;
      }
      scale_ *= 2.0;
    }
  }
  ++iteration_;
  return line;
}

}  // namespace trainrepro
