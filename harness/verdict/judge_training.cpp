#include "harness/verdict/judge_training.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "harness/golden/gradient_arithmetic.h"
#include "harness/verdict/training_findings.h"

namespace trainrepro {
namespace {

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

bool all_within(const std::vector<TensorComparison>& comparisons) {
  return std::all_of(comparisons.begin(), comparisons.end(), [](const TensorComparison& c) {
    return c.informational || c.within_tolerance;
  });
}

// What the judgement reports whatever the comparison finds: the tolerance, the golden, the
// losses, the skipped steps and the loss scaler's log.
Tolerance record_run(const Scenario& scenario, const Plan& plan, const Trace& trace,
                     const Golden& golden, bool twin_judged, TrainingJudgement& judgement) {
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
  return tolerance;
}

// Every optimizer step both ran against the golden's (and the precision twin's): its gradients
// and parameters, tensor by tensor or, against a twin, as a whole model. Returns how many steps
// were compared.
int64_t compare_steps(const Scenario& scenario, const Plan& plan, const Trace& trace,
                      const Golden& golden, const Tolerance& tolerance, const Trace* precision_twin,
                      TrainingJudgement& judgement) {
  const bool twin_judged = precision_twin != nullptr;
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
    step.micro_batches = run.micro_step - (s == 0 ? 0 : trace.steps[s - 1].micro_step);
    if (!run.skipped) compare_whole_model(run.gradients, reference.gradients, step);
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
  return compared;
}

// A run that stopped, skipped steps on overflow or applied no update it could be judged by:
// its judgement is said here. Returns whether it was.
bool judge_interrupted_run(const Scenario& scenario, const Plan& plan, const Trace& trace,
                           const Golden& golden, int64_t compared, TrainingJudgement& judgement) {
  if (!trace.stopped.empty()) {
    judgement.diagnosis = training_findings::diagnose_stopped_run(trace, plan);
    judgement.mismatch = "the run ended after " + std::to_string(trace.steps.size()) + " of " +
                         std::to_string(scenario.loop.steps) + " optimizer steps: " + trace.stopped;
    return true;
  }
  const SkipReading skips = read_skips(plan, trace, compared);
  judgement.calibration_skips = skips.calibration_skips;
  judgement.applied_steps = skips.applied_steps;
  if (skips.first_failure && skips.first_failure->step < std::max<int64_t>(compared, 1)) {
    judgement.diagnosis = training_findings::diagnose_skipped_steps(trace, plan, skips);
    judgement.mismatch = std::to_string(judgement.skipped_steps.size()) + " of " +
                         std::to_string(trace.steps.size()) +
                         " optimizer steps were skipped on overflow, the first that is not "
                         "loss-scale calibration at step " +
                         std::to_string(skips.first_failure->step);
    return true;
  }
  if (compared > 0 && skips.applied_steps == 0) {
    // Every compared window went to calibration: nothing the run applied can be judged.
    const int64_t more = training_findings::windows_to_settle(plan, trace, golden, compared);
    judgement.not_judged =
        "not judged: all " + std::to_string(compared) +
        " compared optimizer steps were "
        "skipped while DeepSpeed's dynamic loss scale came down from initial_scale_power=" +
        std::to_string(plan.mixed.fp16.initial_scale_power) + " (last tried " +
        loss_scale_text(trace.steps[static_cast<size_t>(compared) - 1].loss_scale) +
        "), so no update was applied to compare; about " + std::to_string(more) + " more window" +
        (more == 1 ? "" : "s") +
        " are needed before the first update: set "
        "golden.steps (and loop.steps) to at least " +
        std::to_string(compared + more + 1) + " (`trainrepro new` counts these windows for you)";
    return true;
  }
  return false;
}

// The first gradient mismatch: the accumulation hypotheses (diagnosis.h), then, judged against
// a precision twin, DeepSpeed's initialization step or low-precision accumulation.
void explain_gradient_mismatch(const Scenario& scenario, const Plan& plan, const Trace& trace,
                               const Golden& golden, const Trace* precision_twin,
                               TrainingJudgement& judgement) {
  const bool twin_judged = precision_twin != nullptr;
  const int64_t s = *judgement.first_gradient_mismatch;
  const double noise = twin_judged ? gradients_relative_error(precision_twin->steps[s].gradients,
                                                              golden.steps[s].gradients)
                                   : 0.0;
  // A hypothesis is a float64 prediction; the run that follows it also rounds the running
  // sum once per micro-step.
  const double hypothesis_noise =
      twin_judged
          ? accumulation_noise(noise, plan.batch.gradient_accumulation_steps, plan.precision)
          : 0.0;
  judgement.diagnosis =
      diagnose_gradient_mismatch(scenario, plan, trace, golden, s, hypothesis_noise);
  if (twin_judged && !judgement.diagnosis->kind) {
    // The initialization step leaves the first gradients alone: the model's weights are
    // copied from the masters only at the first real step.
    if (training_findings::initialization_step_changes_training(plan) && s > 0) {
      training_findings::diagnose_initialization_step(plan, *judgement.diagnosis);
    } else {
      training_findings::diagnose_low_precision_accumulation(plan, trace, golden, s, noise,
                                                             *judgement.diagnosis);
    }
  }
  judgement.mismatch = "gradients differ from the golden at optimizer step " + std::to_string(s) +
                       ": " + training_findings::describe_worst(judgement.steps[s].gradients);
}

// The first parameter mismatch after matching gradients: the settings that change the update
// (initialization step, learning-rate schedule, loss scale, Lamb over partitions).
void explain_parameter_mismatch(const Plan& plan, const Trace& trace, bool twin_judged,
                                TrainingJudgement& judgement) {
  const int64_t s = *judgement.first_parameter_mismatch;
  judgement.diagnosis = diagnose_parameter_mismatch(plan, s);
  if (twin_judged && training_findings::initialization_step_changes_training(plan)) {
    training_findings::diagnose_initialization_step(plan, *judgement.diagnosis);
  }
  training_findings::diagnose_learning_rate(plan, trace, s, *judgement.diagnosis);
  if (!judgement.diagnosis->kind) {
    training_findings::diagnose_start_rate_first_group_only(plan, trace, s, *judgement.diagnosis);
  }
  if (!judgement.diagnosis->kind)
    training_findings::diagnose_grown_scale(plan, trace, s, *judgement.diagnosis);
  if (!judgement.diagnosis->kind)
    training_findings::diagnose_partitioned_lamb(plan, *judgement.diagnosis);
  judgement.mismatch = "parameters differ from the golden after optimizer step " +
                       std::to_string(s) + ": " +
                       training_findings::describe_worst(judgement.steps[s].parameters);
}

// The first mismatch, explained: a divergence is the finding whatever else differs; otherwise the
// first step whose gradients differ, else the first whose parameters do.
void explain_first_mismatch(const Scenario& scenario, const Plan& plan, const Trace& trace,
                            const Golden& golden, const Trace* precision_twin,
                            TrainingJudgement& judgement) {
  judgement.divergence = training_findings::find_divergence(trace);
  const bool gradient_first =
      judgement.first_gradient_mismatch &&
      (!judgement.first_parameter_mismatch ||
       *judgement.first_gradient_mismatch <= *judgement.first_parameter_mismatch);
  if (judgement.divergence) {
    // No hypothesis about accumulation explains a NaN; the divergence is the finding.
    const int64_t s =
        judgement.first_gradient_mismatch.value_or(judgement.first_parameter_mismatch.value_or(0));
    judgement.diagnosis = training_findings::diagnose_divergence(*judgement.divergence, s);
    if (judgement.first_gradient_mismatch || judgement.first_parameter_mismatch) {
      const bool gradients = gradient_first;
      judgement.mismatch =
          std::string(gradients ? "gradients" : "parameters") +
          " differ from the golden at optimizer step " + std::to_string(s) + ": " +
          training_findings::describe_worst(gradients ? judgement.steps[s].gradients
                                                      : judgement.steps[s].parameters);
    } else {
      judgement.mismatch = "the run matches the golden, which diverged too";
    }
  } else if (gradient_first) {
    explain_gradient_mismatch(scenario, plan, trace, golden, precision_twin, judgement);
  } else if (judgement.first_parameter_mismatch) {
    explain_parameter_mismatch(plan, trace, precision_twin != nullptr, judgement);
  }
}

}  // namespace

void compare_whole_model(const std::vector<at::Tensor>& run, const std::vector<at::Tensor>& golden,
                         StepJudgement& step) {
  if (run.empty() || run.size() != golden.size()) return;
  for (size_t i = 0; i < run.size(); ++i) {
    if (!run[i].defined() || !golden[i].defined() || !run[i].sizes().equals(golden[i].sizes())) {
      return;
    }
  }
  const double run_norm = norm_of(run);
  const double golden_norm = norm_of(golden);
  step.relative_error = relative_error(run, golden);
  step.norm_ratio = run_norm / std::max(golden_norm, 1e-300);
  step.cosine = dot(run, golden) / std::max(run_norm * golden_norm, 1e-300);
}

void judge_training(const Scenario& scenario, const Plan& plan, const Trace& trace,
                    const Golden& golden, TrainingJudgement& judgement,
                    const Trace* precision_twin) {
  // The twin judges only low-precision runs.
  if (plan.precision == Precision::fp32) precision_twin = nullptr;
  const Tolerance tolerance =
      record_run(scenario, plan, trace, golden, precision_twin != nullptr, judgement);
  const int64_t compared =
      compare_steps(scenario, plan, trace, golden, tolerance, precision_twin, judgement);
  if (judge_interrupted_run(scenario, plan, trace, golden, compared, judgement)) return;
  explain_first_mismatch(scenario, plan, trace, golden, precision_twin, judgement);
}

}  // namespace trainrepro
