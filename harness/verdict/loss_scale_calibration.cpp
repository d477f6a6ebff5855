#include "harness/verdict/loss_scale_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainrepro {

SkipReading read_skips(const Plan& plan, const Trace& trace, int64_t compared) {
  SkipReading reading;
  const bool dynamic_fp16 =
      plan.precision == Precision::fp16 && plan.mixed.fp16.loss_scale == 0.0;
  const int64_t window = std::max<int64_t>(plan.mixed.fp16.loss_scale_window, 1);
  // The highest scale that has held for loss_scale_window clean windows in a row (DeepSpeed's
  // own test of a stable scale, after which it tries twice the scale), and the step that
  // completed that window; a skip at or below it is not the scale being found.
  double settled_scale = 0.0;
  int64_t settled_step = -1;
  int64_t clean_in_a_row = 0;
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    const OptimizerStepRecord& record = trace.steps[i];
    const int64_t s = static_cast<int64_t>(i);
    if (!record.skipped) {
      if (s < compared) ++reading.applied_steps;
      if (++clean_in_a_row >= window && record.loss_scale >= settled_scale) {
        settled_scale = record.loss_scale;
        settled_step = s;
      }
      continue;
    }
    clean_in_a_row = 0;
    SkippedStep skip;
    skip.step = s;
    skip.loss_scale = record.loss_scale;
    if (plan.precision != Precision::fp16) {
      skip.cause = SkipCause::no_loss_scale;
    } else if (!dynamic_fp16) {
      skip.cause = SkipCause::static_scale;
    } else if (record.loss_scale <= plan.mixed.fp16.min_loss_scale) {
      skip.cause = SkipCause::at_minimum_scale;
    } else if (settled_step >= 0 && record.loss_scale <= settled_scale) {
      skip.cause = SkipCause::after_settling;
      skip.settled_step = settled_step;
      skip.settled_scale = settled_scale;
    }
    if (skip.cause == SkipCause::calibration && s < compared) ++reading.calibration_skips;
    if (skip.cause != SkipCause::calibration && !reading.first_failure) {
      reading.first_failure = skip;
    }
    reading.skips.push_back(skip);
  }
  return reading;
}

std::vector<bool> skip_mask(const Trace& trace) {
  std::vector<bool> mask;
  for (const OptimizerStepRecord& record : trace.steps) mask.push_back(record.skipped);
  return mask;
}

std::string loss_scale_text(double scale) {
  char text[64];
  int exponent = 0;
  const bool power_of_two = scale > 0.0 && std::frexp(scale, &exponent) == 0.5;
  if (scale >= 1.0 && scale < 1e15 && scale == std::floor(scale)) {
    if (power_of_two) {
      std::snprintf(text, sizeof text, "%.0f (2^%d)", scale, exponent - 1);
    } else {
      std::snprintf(text, sizeof text, "%.0f", scale);
    }
  } else {
    std::snprintf(text, sizeof text, "%.6g", scale);
  }
  return text;
}

}  // namespace trainrepro
