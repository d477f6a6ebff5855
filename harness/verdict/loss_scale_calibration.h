// Which of a run's skipped optimizer steps are DeepSpeed's dynamic fp16 loss scale finding its
// level, and which are a failure.
//
// With "fp16": {"loss_scale": 0} DeepSpeed starts at 2^initial_scale_power and halves the scale
// on each overflowed window (at ZeRO stages 1-3 after spending its hysteresis), skipping that
// window's update: the "OVERFLOW! … Skipping step" lines at the start of every fp16 run. The
// first windows set a level, later windows with larger gradients take it lower, and after each
// loss_scale_window clean windows the doubled scale is tried and may overflow. Each of these skips
// is calibration. DeepSpeed 0.19.8: runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale,
// runtime/fp16/fused_optimizer.py FP16_Optimizer._update_scale, runtime/engine.py
// _take_model_step (a skip counts in skipped_steps and does not step the LR scheduler).
//
// Not calibration: any skip with a static scale or in bf16 (nothing to calibrate), a skip at
// min_loss_scale (the scale is pinned: the gradients overflow at any scale), and a skip at or
// below a settled scale: one that held for loss_scale_window clean windows in a row, DeepSpeed's
// own test of a stable scale (the gradients grew beyond what had been stable). With DeepSpeed's
// default window of 1000 a short run never settles, so there only the first three can fail it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"

namespace trainrepro {

enum class SkipCause {
  calibration,       // the dynamic scale coming down, or trying a doubled scale
  static_scale,      // fp16.loss_scale > 0: the scale never comes down
  no_loss_scale,     // bf16 (or fp32): non-finite gradients, nothing to calibrate
  at_minimum_scale,  // skipped at min_loss_scale
  after_settling,    // skipped at or below a scale that held for loss_scale_window windows
};

struct SkippedStep {
  int64_t step = 0;
  double loss_scale = 1.0;  // the scale the window's gradients carried
  SkipCause cause = SkipCause::calibration;
  // after_settling: the step that completed loss_scale_window clean windows at the highest
  // such scale (at or above this skip's), and that scale.
  int64_t settled_step = -1;
  double settled_scale = 0.0;
};

struct SkipReading {
  std::vector<SkippedStep> skips;  // every skipped step of the run, in order
  // The first skip that is not calibration, if any.
  std::optional<SkippedStep> first_failure;
  // Calibration skips and applied updates among the first `compared` steps.
  int64_t calibration_skips = 0;
  int64_t applied_steps = 0;
};

SkipReading read_skips(const Plan& plan, const Trace& trace, int64_t compared);

// The skipped steps as a mask over the run's optimizer steps (what the golden follows).
std::vector<bool> skip_mask(const Trace& trace);

// "65536 (2^16)", "1000", "0.5": loss scales are mostly powers of two, read as such.
std::string loss_scale_text(double scale);

}  // namespace trainrepro
