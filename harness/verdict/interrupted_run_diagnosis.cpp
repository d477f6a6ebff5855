// Why a run cannot be judged step by step: it stopped, it diverged (a NaN or Inf), or it
// skipped optimizer steps on overflow that are not loss-scale calibration.
#include "harness/verdict/training_findings.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

namespace trainrepro::training_findings {
namespace {

// "layers.0.weight has 3 NaN/Inf of 512 elements", or empty when every element is finite.
std::string describe_non_finite(const std::string& name, const at::Tensor& tensor) {
  const int64_t count = tensor.isfinite().logical_not().sum().item<int64_t>();
  if (count == 0) return "";
  return name + " has " + std::to_string(count) + " NaN/Inf of " + std::to_string(tensor.numel()) +
         " elements";
}

}  // namespace

// The first NaN or Inf the run produced, in the order it happened: the losses of the
// micro-steps before an optimizer step, then that step's gradients, then its parameters.
std::optional<std::string> find_divergence(const Trace& trace) {
  size_t micro = 0;
  const auto first_bad_loss = [&](size_t until) -> std::optional<std::string> {
    for (; micro < until && micro < trace.micro_steps.size(); ++micro) {
      const double loss = trace.micro_steps[micro].loss;
      if (!std::isfinite(loss)) {
        return "the loss of micro-step " + std::to_string(micro) + " is " + format_number(loss);
      }
    }
    return std::nullopt;
  };
  for (size_t s = 0; s < trace.steps.size(); ++s) {
    const OptimizerStepRecord& step = trace.steps[s];
    if (auto bad = first_bad_loss(static_cast<size_t>(step.micro_step))) return bad;
    // A skipped step's gradients overflowed: that is why it was skipped, not a divergence.
    for (size_t i = 0; i < (step.skipped ? 0 : step.gradients.size()); ++i) {
      const std::string text = describe_non_finite(trace.parameter_names[i], step.gradients[i]);
      if (!text.empty()) return "at optimizer step " + std::to_string(s) + " the gradient " + text;
    }
    for (size_t i = 0; i < step.parameters.size(); ++i) {
      const std::string text = describe_non_finite(trace.parameter_names[i], step.parameters[i]);
      if (!text.empty()) {
        return "after optimizer step " + std::to_string(s) + " the parameter " + text;
      }
    }
  }
  return first_bad_loss(trace.micro_steps.size());
}

Diagnosis diagnose_divergence(const std::string& divergence, int64_t step) {
  Diagnosis diagnosis;
  diagnosis.kind = DiagnosisKind::training_diverged;
  diagnosis.step = step;
  diagnosis.explanation =
      "training diverged: " + divergence +
      ". A NaN or Inf is never a pass, even where the golden diverged the same way. Look at the "
      "learning rate, the optimizer's betas and eps, and the loss scale; if the scenario "
      "reproduces a divergence on purpose, expect the diagnosis training_diverged";
  return diagnosis;
}

// DynamicLossScaler raised at its minimum scale (ZeRO stages 1-3): DeepSpeed ends the run.
Diagnosis diagnose_stopped_run(const Trace& trace, const Plan& plan) {
  Diagnosis diagnosis;
  diagnosis.kind = DiagnosisKind::loss_scale_at_minimum;
  diagnosis.step = static_cast<int64_t>(trace.steps.size());
  diagnosis.explanation =
      "DeepSpeed's loss scaler reached min_loss_scale=" +
      loss_scale_text(plan.mixed.fp16.min_loss_scale) +
      " and the gradients still overflow, so ZeRO stage " + std::to_string(plan.zero_stage) +
      "'s DynamicLossScaler raised and the run ended: the fp16 gradients are non-finite at any "
      "scale (an Inf or NaN in the forward pass, or values beyond fp16's 65504 before scaling). "
      "Look for the overflow in the model, use bf16, or lower min_loss_scale only if the "
      "gradients are finite in float32";
  return diagnosis;
}

// A skipped step that is not loss-scale calibration (loss_scale_calibration.h): each one
// discards a whole accumulation window. Calibration skips before it are counted apart.
Diagnosis diagnose_skipped_steps(const Trace& trace, const Plan& plan, const SkipReading& skips) {
  const SkippedStep& failure = *skips.first_failure;
  Diagnosis diagnosis;
  diagnosis.kind = DiagnosisKind::overflow_skipped_steps;
  diagnosis.step = failure.step;
  int64_t failures = 0, calibration = 0;
  for (const SkippedStep& skip : skips.skips) {
    (skip.cause == SkipCause::calibration ? calibration : failures) += 1;
  }
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  std::string text = std::to_string(failures) + " of " + std::to_string(trace.steps.size()) +
                     " optimizer steps were skipped on overflow without being loss-scale "
                     "calibration, the first at step " +
                     std::to_string(failure.step);
  if (plan.precision == Precision::fp16) {
    text += " at loss scale " + loss_scale_text(failure.loss_scale);
  }
  if (calibration > 0) {
    text += " (and " + std::to_string(calibration) + " calibration skip" +
            (calibration == 1 ? "" : "s") +
            " while the dynamic scale came down, which are DeepSpeed working)";
  }
  text += ". DeepSpeed skips the whole window (" + std::to_string(gas) + " micro-batch" +
          (gas == 1 ? "" : "es") +
          ") without updating the weights; engine.skipped_steps counts it and the LR scheduler "
          "does not advance";
  switch (failure.cause) {
    case SkipCause::static_scale:
      text += ". The loss scale is static (fp16.loss_scale=" +
              loss_scale_text(plan.mixed.fp16.loss_scale) +
              "), so it never comes down and every window that overflows is lost: use dynamic "
              "scaling (loss_scale 0) or a smaller scale";
      break;
    case SkipCause::at_minimum_scale:
      text += ". The scale is pinned at min_loss_scale=" +
              loss_scale_text(plan.mixed.fp16.min_loss_scale) +
              " and the gradients still overflow: they are non-finite at any scale (an Inf or "
              "NaN in the forward pass, or values beyond fp16's 65504 before scaling)";
      break;
    case SkipCause::after_settling:
      text += ". The scale had settled: at step " + std::to_string(failure.settled_step) +
              " loss scale " + loss_scale_text(failure.settled_scale) + " had applied " +
              std::to_string(plan.mixed.fp16.loss_scale_window) +
              " windows in a row without overflow (loss_scale_window, DeepSpeed's own test of a "
              "stable scale), so an overflow at or below it is not the scale being found: the "
              "gradients grew beyond what had been stable (a diverging run, a bad batch, a "
              "learning rate too high)";
      break;
    case SkipCause::no_loss_scale:
      text += ". " + std::string(precision_name(plan.precision)) +
              " has no loss scale: non-finite gradients mean the forward or backward overflowed";
      break;
    case SkipCause::calibration:
      break;
  }
  diagnosis.explanation = text;
  return diagnosis;
}

// How many more windows the dynamic scale needs, from the gradients the golden computed at the
// run's weights (its first applied update is the same update at the same weights): DeepSpeed's
// scaler is stepped on "overflow" while the scaled gradient's largest element is beyond fp16's
// 65504. A floor: an activation's gradient can overflow before any parameter's does.
int64_t windows_to_settle(const Plan& plan, const Trace& trace, const Golden& golden,
                          int64_t compared) {
  // The loop ran on past the compared steps (the steps a memory verdict needs): the first
  // update it applied there is the answer, not a prediction.
  for (size_t s = static_cast<size_t>(compared); s < trace.steps.size(); ++s) {
    if (!trace.steps[s].skipped) return static_cast<int64_t>(s) - compared;
  }
  double largest = 0.0;
  for (const at::Tensor& gradient : golden.steps.front().gradients) {
    if (gradient.defined() && gradient.numel()) {
      largest = std::max(largest, gradient.abs().max().item<double>());
    }
  }
  constexpr double kFp16Max = 65504.0;
  const int64_t hysteresis =
      plan.mixed.scaler == LossScalerKind::zero_dynamic ? plan.mixed.fp16.hysteresis : 1;
  // Every window the trace ran overflowed; the last at `scale`: it halves (or spends
  // hysteresis) at least once more.
  double scale = trace.steps.back().loss_scale;
  int64_t windows = static_cast<int64_t>(trace.steps.size()) - compared;
  int64_t predicted = 0;
  while (scale > plan.mixed.fp16.min_loss_scale && predicted < 4096 &&
         (predicted == 0 || scale * largest >= kFp16Max)) {
    predicted += hysteresis;
    scale /= 2.0;
  }
  return windows + predicted;
}

}  // namespace trainrepro::training_findings
