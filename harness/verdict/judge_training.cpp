#include "harness/verdict/judge_training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <ATen/ATen.h>

#include "harness/verdict/judge_config.h"
#include "harness/verdict/judge_memory.h"
#include "harness/verdict/judge_zero.h"
#include "harness/verdict/loss_scale_calibration.h"

namespace trainrepro {
namespace {

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string describe_worst(const std::vector<TensorComparison>& comparisons) {
  const TensorComparison* worst = nullptr;
  // Judged against a precision twin: the whole model decides (compare_model_with_twin).
  if (!comparisons.empty() && comparisons.front().twin_rms_error >= 0.0) {
    const TensorComparison& whole = comparisons.front();
    return whole.name + ": RMS error " + format_number(whole.rms_error) +
           " vs the precision twin's " + format_number(whole.twin_rms_error) + " (" +
           format_number(whole.tolerance_used * 100.0) + "% of the limit " +
           format_number(kPrecisionTwinFactor) + "x the twin's; max abs error " +
           format_number(whole.max_abs_error) + ", norm ratio " + format_number(whole.norm_ratio) +
           ", cosine " + format_number(whole.cosine) + ")";
  }
  for (const TensorComparison& comparison : comparisons) {
    if (!worst || comparison.tolerance_used > worst->tolerance_used) worst = &comparison;
  }
  if (!worst) return "";
  if (!worst->shape_mismatch.empty()) return worst->name + ": " + worst->shape_mismatch;
  std::string index;
  for (int64_t i : worst->worst_index) index += (index.empty() ? "" : ",") + std::to_string(i);
  return worst->name + "[" + index + "]: " + format_number(worst->worst_actual) + " vs golden " +
         format_number(worst->worst_expected) + " (max abs error " +
         format_number(worst->max_abs_error) + ", max rel error " +
         format_number(worst->max_rel_error) + ", " + format_number(worst->tolerance_used * 100.0) +
         "% of tolerance, norm ratio " + format_number(worst->norm_ratio) + ", cosine " +
         format_number(worst->cosine) +
         (worst->twin_rms_error >= 0.0
              ? ", RMS error " + format_number(worst->rms_error) + " vs the precision twin's " +
                    format_number(worst->twin_rms_error) + ", limit " +
                    format_number(kPrecisionTwinFactor) + "x the twin's"
              : std::string()) +
         ")";
}

// Adam's update m/(sqrt(v)+eps) turns a gradient difference δ at an element whose gradient g
// is near zero into a parameter difference of up to lr per step: its sensitivity is about
// δ/(|g|+eps). So each step adds lr * min(2, 4 δ/(|g|+eps)) to the allowed parameter error,
// with δ the gradient difference actually measured — nothing for an exact run, a bounded
// amount for float32 — instead of loosening every tolerance. lr is the rate the step used (a
// scheduler's may exceed the optimizer's); Lamb multiplies it by a trust ratio of at most
// max_coeff.
class AdamAllowance {
 public:
  explicit AdamAllowance(const OptimizerConfig& optimizer) : optimizer_(optimizer) {}
  bool applies() const { return optimizer_.kind != OptimizerKind::sgd; }

  void add_step(const std::vector<at::Tensor>& run_gradients,
                const std::vector<at::Tensor>& golden_gradients, double step_lr) {
    if (!applies()) return;
    const double largest_step =
        step_lr * (optimizer_.kind == OptimizerKind::lamb ? optimizer_.max_coeff : 1.0);
    if (allowance_.empty()) {
      for (const at::Tensor& gradient : golden_gradients)
        allowance_.push_back(at::zeros_like(gradient));
    }
    for (size_t i = 0; i < golden_gradients.size(); ++i) {
      const at::Tensor difference = (run_gradients[i] - golden_gradients[i]).abs();
      const at::Tensor sensitivity =
          difference.mul(4.0).div(golden_gradients[i].abs().add(optimizer_.eps)).clamp_max(2.0);
      allowance_[i] = allowance_[i] + sensitivity.mul(largest_step);
    }
  }
  at::Tensor for_parameter(size_t i) const { return applies() ? allowance_[i] : at::Tensor(); }

 private:
  OptimizerConfig optimizer_;
  std::vector<at::Tensor> allowance_;
};

// "layers.0.weight has 3 NaN/Inf of 512 elements", or empty when every element is finite.
std::string describe_non_finite(const std::string& name, const at::Tensor& tensor) {
  const int64_t count = tensor.isfinite().logical_not().sum().item<int64_t>();
  if (count == 0) return "";
  return name + " has " + std::to_string(count) + " NaN/Inf of " + std::to_string(tensor.numel()) +
         " elements";
}

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

bool all_within(const std::vector<TensorComparison>& comparisons) {
  return std::all_of(comparisons.begin(), comparisons.end(),
                     [](const TensorComparison& c) { return c.informational || c.within_tolerance; });
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
                     "calibration, the first at step " + std::to_string(failure.step);
  if (plan.precision == Precision::fp16) {
    text += " at loss scale " + loss_scale_text(failure.loss_scale);
  }
  if (calibration > 0) {
    text += " (and " + std::to_string(calibration) +
            " calibration skip" + (calibration == 1 ? "" : "s") +
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
int64_t windows_to_settle(const Plan& plan, const Trace& trace, const Golden& golden) {
  double largest = 0.0;
  for (const at::Tensor& gradient : golden.steps.front().gradients) {
    if (gradient.defined() && gradient.numel()) {
      largest = std::max(largest, gradient.abs().max().item<double>());
    }
  }
  constexpr double kFp16Max = 65504.0;
  const int64_t hysteresis =
      plan.mixed.scaler == LossScalerKind::zero_dynamic ? plan.mixed.fp16.hysteresis : 1;
  double scale = trace.steps.back().loss_scale;
  int64_t windows = 0;
  // The last window overflowed at `scale`: it halves (or spends hysteresis) at least once more.
  while (scale > plan.mixed.fp16.min_loss_scale && windows < 4096 &&
         (windows == 0 || scale * largest >= kFp16Max)) {
    windows += hysteresis;
    scale /= 2.0;
  }
  return windows;
}

// No fault hypothesis explains a mixed-precision mismatch. When the run is nearer the golden
// than every fault tested, its semantics are DeepSpeed's and the extra error is rounding: with
// gradients accumulated in fp16/bf16 across micro-steps, that is the accumulation.
void diagnose_low_precision_accumulation(const Plan& plan, const Trace& trace,
                                         const Golden& golden, int64_t step, double noise,
                                         Diagnosis& diagnosis) {
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  if (gas <= 1 || plan.mixed.accumulate_in_fp32) return;
  const double error =
      gradients_relative_error(trace.steps[step].gradients, golden.steps[step].gradients);
  for (const HypothesisResult& tested : diagnosis.tested) {
    if (tested.relative_error <= error) return;
  }
  diagnosis.kind = DiagnosisKind::low_precision_accumulation;
  diagnosis.explanation =
      explain_low_precision_accumulation(error, noise, gas, precision_name(plan.precision),
                                         plan.zero_stage, plan.deepspeed_version);
}

// Whether FP16_Optimizer's zero-gradient step at construction leaves a trace: Adam's step count
// always; SGD only through weight decay (a momentum buffer seeded with zeros then takes the first
// gradient whole, as an empty one would, unless dampening scales it); Lamb through its bias
// correction or weight decay (its update of zero moments is otherwise zero).
bool initialization_step_changes_training(const Plan& plan) {
  if (!plan.mixed.optimizer_steps_at_initialization) return false;
  const OptimizerConfig& optimizer = plan.optimizer;
  switch (optimizer.kind) {
    case OptimizerKind::sgd:
      return optimizer.weight_decay != 0.0 ||
             (optimizer.momentum != 0.0 && optimizer.dampening != 0.0);
    case OptimizerKind::lamb:
      return optimizer.bias_correction || optimizer.weight_decay != 0.0;
    default:
      return true;
  }
}

// FP16_Optimizer's zero-gradient step at construction (precision_config.h): every update after
// it differs from the golden's, by a factor the optimizer's settings give for the first one.
void diagnose_initialization_step(const Plan& plan, Diagnosis& diagnosis) {
  diagnosis.kind = DiagnosisKind::optimizer_stepped_at_initialization;
  const OptimizerConfig& optimizer = plan.optimizer;
  std::string effect;
  if (optimizer.kind == OptimizerKind::sgd) {
    effect = "with SGD the weight decay shrank the master weights once and seeded the momentum";
  } else if (optimizer.kind == OptimizerKind::lamb) {
    effect = std::string("Lamb's step count started at 1") +
             (optimizer.bias_correction ? " (so every step used the bias correction of the next)"
                                        : "") +
             (optimizer.weight_decay > 0.0
                  ? ", and its weight decay, scaled by a trust ratio of up to max_coeff, shrank "
                    "the float32 master weights once"
                  : std::string());
  } else {
    const double first_update =
        std::sqrt(1.0 + optimizer.beta2) / (1.0 + optimizer.beta1);  // Adam at step 2, m1 = 0
    effect = "Adam's step count started at 1, so the first real update used the bias "
             "correction of step 2 (" + format_number(first_update) +
             "x the intended size for betas " + format_number(optimizer.beta1) + ", " +
             format_number(optimizer.beta2) + ")" +
             (optimizer.weight_decay > 0.0 ? ", and weight decay shrank the float32 master "
                                             "weights once"
                                           : std::string());
  }
  diagnosis.explanation =
      "DeepSpeed " + plan.deepspeed_version + "'s FP16_Optimizer (ZeRO stage 0 with " +
      precision_name(plan.precision) +
      ") stepped the optimizer once with zero gradients when deepspeed.initialize built it "
      "(initialize_optimizer_states): " + effect +
      "; every later step inherits it. This is DeepSpeed's behaviour, not the loop's (upstream "
      "PR #5104 \"Remove optimizer step on initialization\", released in 0.13.2, removed it "
      "from ZeRO stages 1-3 and BF16_Optimizer only). ZeRO stages 1-3 and BF16_Optimizer do "
      "not do it: ZeRO stage 1 gives the intended updates";
}

// The learning rate of optimizer step `step` against the config's schedule. The correct loop
// leaves the scheduler to the engine, which steps it once per optimizer step it takes; the
// hypothesis: the loop also called lr_scheduler.step() after every micro-batch before it.
void diagnose_learning_rate(const Plan& plan, const Trace& trace, int64_t step,
                            Diagnosis& diagnosis) {
  if (!plan.lr_schedule) return;
  const LrSchedule& schedule = *plan.lr_schedule;
  int64_t engine_steps = 0;  // scheduler steps the engine took before this optimizer step
  for (int64_t k = 0; k < step; ++k) {
    if (trace.steps[k].through_engine && !trace.steps[k].skipped) ++engine_steps;
  }
  const OptimizerStepRecord& record = trace.steps[step];
  const auto same = [](double a, double b) {
    return std::abs(a - b) <= 1e-12 * std::max({std::abs(a), std::abs(b), 1e-300});
  };
  const int64_t correct_iteration = engine_steps - 1;
  const double intended = scheduled_lr(schedule, correct_iteration, plan.optimizer.lr);
  if (same(record.lr, intended)) return;
  const int64_t loop_steps = record.micro_step - 1;  // after each earlier micro-batch
  const double with_loop = scheduled_lr(schedule, correct_iteration + loop_steps, plan.optimizer.lr);
  std::string text = "optimizer step " + std::to_string(step) + " used learning rate " +
                     format_number(record.lr) + ", where the config's " +
                     schedule.type_as_written + " gives " + format_number(intended) +
                     " for it";
  if (!same(record.lr, with_loop)) {
    diagnosis.explanation = text + "; " + diagnosis.explanation;
    return;
  }
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  const int64_t per_step = gas + 1;
  diagnosis.kind = DiagnosisKind::lr_scheduler_stepped_every_micro_step;
  text += ": the scheduler had been stepped " + std::to_string(correct_iteration + loop_steps + 1) +
          " times, not " + std::to_string(correct_iteration + 1) +
          ". The loop calls lr_scheduler.step() after every micro-batch while engine.step() "
          "steps the same scheduler at every boundary, so it advances " +
          std::to_string(per_step) + " times per optimizer step (" + std::to_string(gas) +
          " micro-batches + the engine's 1)";
  if (schedule.kind == LrScheduleKind::one_cycle) {
    const double cycle =
        schedule.one_cycle.cycle_first_step_size + schedule.one_cycle.cycle_second_step_size;
    const double steps = std::ceil(cycle / static_cast<double>(per_step));
    text += ": its cycle of " + format_number(cycle) + " steps ends after about " +
            format_number(steps) + (steps == 1.0 ? " optimizer step" : " optimizer steps");
  } else {
    const int64_t warmup = std::max<int64_t>(2, schedule.warmup_num_steps);
    const int64_t steps = (warmup + per_step - 1) / per_step;
    text += ": its warm-up of " + std::to_string(warmup) + " steps ends after about " +
            std::to_string(steps) + (steps == 1 ? " optimizer step" : " optimizer steps");
  }
  diagnosis.explanation =
      text + ". Fix: remove the loop's lr_scheduler.step(); DeepSpeed steps the scheduler it "
             "built from the config (or was given) inside engine.step(), once per optimizer step";
}

// WarmupCosineLR before DeepSpeed 0.19.0 (lr_schedule.h): the first update of every param group
// but the first runs at the group's full lr instead of the schedule's start rate, while the
// gradients match. Only the scheduler's first update (iteration -1) is affected.
void diagnose_start_rate_first_group_only(const Plan& plan, const Trace& trace, int64_t step,
                                          Diagnosis& diagnosis) {
  if (!plan.lr_schedule || !plan.lr_schedule->construction_rate_first_group_only) return;
  // The Trainer's AdamW has two groups (decayed weights; biases and LayerNorm), one lr.
  std::vector<double> group_lrs;
  for (const ParameterGroup& group : plan.optimizer.parameter_groups) group_lrs.push_back(group.lr);
  if (plan.optimizer.decay_skips_bias_and_norm) group_lrs = {plan.optimizer.lr, plan.optimizer.lr};
  const size_t groups = group_lrs.size();
  if (groups < 2 || step >= static_cast<int64_t>(trace.steps.size())) return;
  if (trace.steps[step].scheduler_iteration != -1) return;
  const double start = scheduled_lr(*plan.lr_schedule, -1, plan.optimizer.lr);
  diagnosis.kind = DiagnosisKind::scheduler_start_rate_first_group_only;
  std::string rates;
  for (size_t g = 1; g < groups; ++g) {
    rates += (g > 1 ? ", " : "") + std::string("group ") + std::to_string(g) + " at " +
             format_number(group_lrs[g]);
  }
  diagnosis.explanation =
      "the gradients match the golden but the first update does not: DeepSpeed " +
      plan.deepspeed_version + "'s " + plan.lr_schedule->type_as_written +
      " writes the rate it starts from (" + format_number(start) +
      ") into the first param group only when deepspeed.initialize builds it (get_lr() returns "
      "one rate, which update_lr pairs with the groups), so the other " +
      std::to_string(groups - 1) + " group(s) took their first step at their full learning "
      "rate (" + rates + ") instead of warming up from " + format_number(start) +
      ". A DeepSpeed bug, fixed in 0.19.0 (PR #7969, \"Fix WarmupCosineLR multi-group "
      "initialization\"). Fix: upgrade DeepSpeed to 0.19.0 or later, or give the optimizer one "
      "param group";
}

// ZeRO stages 1-2 flatten the model and hand FusedLamb each rank's flat float32 partition as one
// tensor (stage_1_and_2.py: param_group["params"] = [the rank's partition]); stage 3 does the same
// with each sub group's flat partition of the rank's shards (stage3.py _optimizer_step; one sub
// group below sub_group_size, 1e9 elements). So the trust ratio ||p|| / ||update|| is taken over
// a partition spanning layers, not layer by layer as LAMB intends and as the golden's
// single-rank stage-0 run does.
void diagnose_partitioned_lamb(const Plan& plan, Diagnosis& diagnosis) {
  if (plan.optimizer.kind != OptimizerKind::lamb || plan.zero_stage < 1) return;
  diagnosis.kind = DiagnosisKind::lamb_trust_ratio_over_partition;
  const int64_t ranks = plan.batch.world_size;
  diagnosis.explanation =
      "the gradients match the golden but the Lamb update does not: at ZeRO stage " +
      std::to_string(plan.zero_stage) + " DeepSpeed " + plan.deepspeed_version +
      " gives FusedLamb each rank's flat partition of " +
      (plan.optimizer.parameter_groups.size() > 1 || plan.optimizer.decay_skips_bias_and_norm
           ? std::string("each param group")
           : std::string("the whole model")) +
      " as one tensor" +
      (plan.zero_stage == 3 ? std::string(" (at stage 3: the rank's shards of every parameter "
                                          "side by side, one tensor per sub group)")
                            : std::string()) +
      ", so its "
      "trust ratio ||p|| / ||update|| is computed over " +
      (ranks == 1 ? std::string("the whole model at once")
                  : "each of the " + std::to_string(ranks) + " ranks' partitions") +
      " instead of per layer (the golden's per-tensor Lamb). This is why Lamb is an untested "
      "ZeRO optimizer (zero_allow_untested_optimizer). Stage 0 keeps LAMB's layer-wise ratio";
}

// DeepSpeed raises the fp16 loss scale before it unscales (precision_config.h): the first step
// of the run whose gradients were divided by a larger scale than they carried.
void diagnose_grown_scale(const Plan& plan, const Trace& trace, int64_t step,
                          Diagnosis& diagnosis) {
  if (plan.precision != Precision::fp16) return;
  for (int64_t s = 0; s <= step && s < static_cast<int64_t>(trace.steps.size()); ++s) {
    const OptimizerStepRecord& record = trace.steps[s];
    if (record.skipped || record.unscaled_by <= record.loss_scale) continue;
    diagnosis.kind = DiagnosisKind::unscaled_by_grown_scale;
    diagnosis.step = s;
    diagnosis.explanation =
        "at optimizer step " + std::to_string(s) + " the gradients carried loss scale " +
        loss_scale_text(record.loss_scale) + ", but DeepSpeed " + plan.deepspeed_version +
        " raised the scale to " + loss_scale_text(record.unscaled_by) +
        " (after loss_scale_window = " + std::to_string(plan.mixed.fp16.loss_scale_window) +
        " steps without overflow) before unscaling, and divided them by the new scale: that "
        "update used " + format_number(record.loss_scale / record.unscaled_by) +
        "x the gradient. DeepSpeed's fp16 optimizers (FP16_Optimizer and ZeRO 1-3) call "
        "_update_scale before unscale_and_clip_grads; it happens once per loss_scale_window "
        "clean steps (DeepSpeed's default 1000). Not the loop's doing; bf16, which has no loss "
        "scale, avoids it";
    return;
  }
}

}  // namespace

void judge_training(const Scenario& scenario, const Plan& plan, const Trace& trace,
                    const Golden& golden, TrainingJudgement& judgement,
                    const Trace* precision_twin) {
  Tolerance tolerance = default_tolerance(plan.dtype);
  if (scenario.tolerance) {
    tolerance = {scenario.tolerance->rtol, scenario.tolerance->atol};
    judgement.tolerance_reason = scenario.tolerance->reason;
  }
  judgement.golden_file = golden.file;
  judgement.gradient_tolerance = tolerance;
  judgement.counters = trace.counters;
  judgement.micro_steps = static_cast<int64_t>(trace.micro_steps.size());
  for (const MicroStepRecord& micro : trace.micro_steps) {
    judgement.micro_step_losses.push_back(micro.loss);
  }

  const bool twin_judged = plan.precision != Precision::fp32 && precision_twin != nullptr;
  if (plan.precision != Precision::fp32) judgement.precision = precision_name(plan.precision);
  if (twin_judged) judgement.precision_twin_factor = kPrecisionTwinFactor;
  judgement.stopped = trace.stopped;
  for (size_t s = 0; s < trace.steps.size(); ++s) {
    const OptimizerStepRecord& run = trace.steps[s];
    if (run.skipped) judgement.skipped_steps.push_back(static_cast<int64_t>(s));
    if (!run.log.empty() && judgement.loss_scale_log.size() < 20) {
      judgement.loss_scale_log.push_back("optimizer step " + std::to_string(s) + ": " + run.log);
    }
  }

  AdamAllowance allowance(plan.optimizer);
  int64_t compared = std::min<int64_t>(scenario.golden.steps, trace.steps.size());
  if (twin_judged) compared = std::min<int64_t>(compared, precision_twin->steps.size());
  double worst_used = -1.0;
  const auto track_worst = [&](const TensorComparison& comparison) {
    if (comparison.tolerance_used > worst_used) {
      worst_used = comparison.tolerance_used;
      judgement.worst_rms_error = comparison.rms_error;
      judgement.worst_twin_rms_error = comparison.twin_rms_error;
    }
  };
  for (int64_t s = 0; s < compared; ++s) {
    const OptimizerStepRecord& run = trace.steps[s];
    const GoldenStep& reference = golden.steps[s];
    StepJudgement step;
    step.step = s;
    step.micro_step = run.micro_step;
    step.loss = run.loss;
    step.golden_loss = reference.loss;
    step.skipped = run.skipped;
    step.loss_scale = run.loss_scale;
    if (!twin_judged) {
      allowance.add_step(run.gradients, reference.gradients, std::max(run.lr, plan.optimizer.lr));
    }
    for (size_t i = 0; i < golden.parameter_names.size(); ++i) {
      const std::string& name = golden.parameter_names[i];
      if (twin_judged) continue;  // judged as a whole model below
      step.gradients.push_back(
          compare_tensors(name, run.gradients[i], reference.gradients[i], tolerance));
      step.parameters.push_back(compare_tensors(name, run.parameters[i], reference.parameters[i],
                                                tolerance, allowance.for_parameter(i)));
    }
    if (twin_judged) {
      const OptimizerStepRecord& twin = precision_twin->steps[s];
      if (!run.skipped) {
        step.gradients =
            compare_model_with_twin(golden.parameter_names, run.gradients, twin.gradients,
                                    reference.gradients, kPrecisionTwinFactor, kPrecisionTwinFloor);
        track_worst(step.gradients.front());
      }
      step.parameters =
          compare_model_with_twin(golden.parameter_names, run.parameters, twin.parameters,
                                  reference.parameters, kPrecisionTwinFactor, kPrecisionTwinFloor);
      track_worst(step.parameters.front());
    }
    step.gradients_match = all_within(step.gradients);
    step.parameters_match = all_within(step.parameters);
    if (!step.gradients_match && !judgement.first_gradient_mismatch) {
      judgement.first_gradient_mismatch = s;
    }
    if (!step.parameters_match && !judgement.first_parameter_mismatch) {
      judgement.first_parameter_mismatch = s;
    }
    judgement.steps.push_back(std::move(step));
  }

  if (!trace.stopped.empty()) {
    judgement.diagnosis = diagnose_stopped_run(trace, plan);
    judgement.mismatch = "the run ended after " + std::to_string(trace.steps.size()) + " of " +
                         std::to_string(scenario.loop.steps) + " optimizer steps: " +
                         trace.stopped;
    return;
  }
  const SkipReading skips = read_skips(plan, trace, compared);
  judgement.calibration_skips = skips.calibration_skips;
  judgement.applied_steps = skips.applied_steps;
  if (skips.first_failure && skips.first_failure->step < std::max<int64_t>(compared, 1)) {
    judgement.diagnosis = diagnose_skipped_steps(trace, plan, skips);
    judgement.mismatch = std::to_string(judgement.skipped_steps.size()) + " of " +
                         std::to_string(trace.steps.size()) +
                         " optimizer steps were skipped on overflow, the first that is not "
                         "loss-scale calibration at step " +
                         std::to_string(skips.first_failure->step);
    return;
  }
  if (compared > 0 && skips.applied_steps == 0) {
    // Every compared window went to calibration: nothing the run applied can be judged.
    const int64_t more = windows_to_settle(plan, trace, golden);
    judgement.not_judged =
        "not judged: all " + std::to_string(compared) + " compared optimizer steps were "
        "skipped while DeepSpeed's dynamic loss scale came down from initial_scale_power=" +
        std::to_string(plan.mixed.fp16.initial_scale_power) + " (last tried " +
        loss_scale_text(trace.steps.back().loss_scale) +
        "), so no update was applied to compare; about " + std::to_string(more) +
        " more window" + (more == 1 ? "" : "s") + " are needed before the first update: set "
        "golden.steps (and loop.steps) to at least " + std::to_string(compared + more + 1) +
        " (`trainrepro new` counts these windows for you)";
    return;
  }

  judgement.divergence = find_divergence(trace);
  const bool gradient_first =
      judgement.first_gradient_mismatch &&
      (!judgement.first_parameter_mismatch ||
       *judgement.first_gradient_mismatch <= *judgement.first_parameter_mismatch);
  if (judgement.divergence) {
    // No hypothesis about accumulation explains a NaN; the divergence is the finding.
    const int64_t s =
        judgement.first_gradient_mismatch.value_or(judgement.first_parameter_mismatch.value_or(0));
    judgement.diagnosis = diagnose_divergence(*judgement.divergence, s);
    if (judgement.first_gradient_mismatch || judgement.first_parameter_mismatch) {
      const bool gradients = gradient_first;
      judgement.mismatch =
          std::string(gradients ? "gradients" : "parameters") +
          " differ from the golden at optimizer step " + std::to_string(s) + ": " +
          describe_worst(gradients ? judgement.steps[s].gradients : judgement.steps[s].parameters);
    } else {
      judgement.mismatch = "the run matches the golden, which diverged too";
    }
  } else if (gradient_first) {
    const int64_t s = *judgement.first_gradient_mismatch;
    const double noise =
        twin_judged ? gradients_relative_error(precision_twin->steps[s].gradients,
                                               golden.steps[s].gradients)
                    : 0.0;
    // A hypothesis is a float64 prediction; the run that follows it also rounds the running
    // sum once per micro-step.
    const double hypothesis_noise =
        twin_judged ? accumulation_noise(noise, plan.batch.gradient_accumulation_steps,
                                         plan.precision)
                    : 0.0;
    judgement.diagnosis =
        diagnose_gradient_mismatch(scenario, plan, trace, golden, s, hypothesis_noise);
    if (twin_judged && !judgement.diagnosis->kind) {
      // The initialization step leaves the first gradients alone: the model's weights are
      // copied from the masters only at the first real step.
      if (initialization_step_changes_training(plan) && s > 0) {
        diagnose_initialization_step(plan, *judgement.diagnosis);
      } else {
        diagnose_low_precision_accumulation(plan, trace, golden, s, noise, *judgement.diagnosis);
      }
    }
    judgement.mismatch = "gradients differ from the golden at optimizer step " + std::to_string(s) +
                         ": " + describe_worst(judgement.steps[s].gradients);
  } else if (judgement.first_parameter_mismatch) {
    const int64_t s = *judgement.first_parameter_mismatch;
    judgement.diagnosis = diagnose_parameter_mismatch(plan, s);
    if (twin_judged && initialization_step_changes_training(plan)) {
      diagnose_initialization_step(plan, *judgement.diagnosis);
    }
    diagnose_learning_rate(plan, trace, s, *judgement.diagnosis);
    if (!judgement.diagnosis->kind) {
      diagnose_start_rate_first_group_only(plan, trace, s, *judgement.diagnosis);
    }
    if (!judgement.diagnosis->kind) diagnose_grown_scale(plan, trace, s, *judgement.diagnosis);
    if (!judgement.diagnosis->kind) diagnose_partitioned_lamb(plan, *judgement.diagnosis);
    judgement.mismatch = "parameters differ from the golden after optimizer step " +
                         std::to_string(s) + ": " + describe_worst(judgement.steps[s].parameters);
  }
}

Verdict judge_run(const Scenario& scenario, const Plan& plan, const Trace& trace,
                  const Golden& golden, TrainingJudgement& training, MemoryJudgement& memory,
                  ZeroJudgement& zero, const Trace* precision_twin) {
  judge_training(scenario, plan, trace, golden, training, precision_twin);
  memory = judge_memory(scenario, plan, trace);
  zero = judge_zero(scenario, plan, trace);
  if (!training.not_judged.empty()) {
    Verdict verdict;
    verdict.outcome = Outcome::error;
    verdict.error_source = ErrorSource::scenario;
    verdict.expected = describe_expectation(scenario.expect);
    verdict.found = scenario.file + ": " + training.not_judged;
    return verdict;
  }

  // What went wrong, each with its words: the gradient story first, then memory.
  std::vector<std::string> found, explanations;
  std::vector<std::optional<DiagnosisKind>> kinds;
  if (training.diagnosis) {
    std::string text = training.mismatch;
    if (training.diagnosis->kind) {
      text += "; diagnosis " +
              std::string(spelling_of(*training.diagnosis->kind, diagnosis_spellings()));
    }
    found.push_back(text);
    explanations.push_back(training.diagnosis->explanation);
    kinds.push_back(training.diagnosis->kind);
  }
  for (size_t i = 0; i < memory.diagnoses.size(); ++i) {
    found.push_back("memory: diagnosis " +
                    std::string(spelling_of(memory.diagnoses[i], diagnosis_spellings())));
    explanations.push_back(memory.explanations[i]);
    kinds.push_back(memory.diagnoses[i]);
  }
  for (size_t i = 0; i < zero.diagnoses.size(); ++i) {
    found.push_back("ZeRO: diagnosis " +
                    std::string(spelling_of(zero.diagnoses[i], diagnosis_spellings())));
    explanations.push_back(zero.explanations[i]);
    kinds.push_back(zero.diagnoses[i]);
  }

  Verdict verdict;
  verdict.expected = describe_expectation(scenario.expect);
  auto join = [](const std::vector<std::string>& parts) {
    std::string text;
    for (const std::string& part : parts) text += (text.empty() ? "" : "; ") + part;
    return text;
  };
  if (kinds.empty()) {
    verdict.found = "gradients and parameters match the golden at all " +
                    std::to_string(training.steps.size()) + " compared optimizer steps";
    if (training.precision_twin_factor > 0.0) {
      verdict.found += " within " + format_number(training.precision_twin_factor) + "x the " +
                       training.precision + " precision twin's error (worst RMS error " +
                       format_number(training.worst_rms_error) + ", twin " +
                       format_number(training.worst_twin_rms_error) + ")";
    }
    if (training.calibration_skips > 0) {
      verdict.found += "; fp16 loss-scale calibration skipped " +
                       std::to_string(training.calibration_skips) + " of them (the golden "
                       "skipped the same windows), " + std::to_string(training.applied_steps) +
                       " applied updates compared";
    }
    verdict.found += memory.judged
                         ? "; memory bounded: no window of steps leaves allocations alive "
                           "(tensors " +
                               format_bytes(memory.tensor.bytes_per_step) + "/step, host heap " +
                               format_bytes(memory.host.bytes_per_step) + "/step)"
                         : "; " + memory.not_judged_reason;
    if (zero.judged) {
      verdict.found += "; model states " + format_bytes(zero.measured.total()) + " (" +
                       std::to_string(zero.model_states_ratio).substr(0, 5) +
                       "x the ZeRO formula), collectives (ring model) " +
                       format_bytes(zero.ring_bytes_per_step) + "/step (" + std::to_string(zero.traffic_ratio).substr(0, 5) + "x)";
    }
    if (!memory.notes.empty()) verdict.found += "; " + memory.notes;
    verdict.outcome = scenario.expect.outcome == ExpectedOutcome::pass ? Outcome::passed
                                                                       : Outcome::not_reproduced;
    return verdict;
  }
  verdict.found = join(found);
  verdict.diagnosis = join(explanations);
  if (!memory.notes.empty()) verdict.found += "; " + memory.notes;
  // Reproduced only when the named diagnosis is found and nothing unexplained beside it: a
  // reproduction that also shows a mismatch no hypothesis explains is not understood.
  const bool expected_found =
      scenario.expect.outcome == ExpectedOutcome::diagnosis &&
      std::find(kinds.begin(), kinds.end(), scenario.expect.diagnosis) != kinds.end();
  const bool unexplained_found = std::find(kinds.begin(), kinds.end(), std::nullopt) != kinds.end();
  // An expected failure without a name is reproduced by any mismatch, explained or not.
  const bool any_failure_expected = scenario.expect.outcome == ExpectedOutcome::failure;
  verdict.outcome = any_failure_expected || (expected_found && !unexplained_found)
                        ? Outcome::reproduced
                        : Outcome::failed;
  return verdict;
}

}  // namespace trainrepro
