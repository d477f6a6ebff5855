#include "harness/verdict/judge_training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <ATen/ATen.h>

#include "harness/verdict/judge_config.h"
#include "harness/verdict/judge_memory.h"
#include "harness/verdict/judge_zero.h"

namespace trainrepro {
namespace {

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string describe_worst(const std::vector<TensorComparison>& comparisons) {
  const TensorComparison* worst = nullptr;
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
         format_number(worst->cosine) + ")";
}

// Adam's update m/(sqrt(v)+eps) turns a gradient difference δ at an element whose gradient g
// is near zero into a parameter difference of up to lr per step: its sensitivity is about
// δ/(|g|+eps). So each step adds lr * min(2, 4 δ/(|g|+eps)) to the allowed parameter error,
// with δ the gradient difference actually measured — nothing for an exact run, a bounded
// amount for float32 — instead of loosening every tolerance.
class AdamAllowance {
 public:
  explicit AdamAllowance(const OptimizerConfig& optimizer) : optimizer_(optimizer) {}
  bool applies() const { return optimizer_.kind != OptimizerKind::sgd; }

  void add_step(const std::vector<at::Tensor>& run_gradients,
                const std::vector<at::Tensor>& golden_gradients) {
    if (!applies()) return;
    if (allowance_.empty()) {
      for (const at::Tensor& gradient : golden_gradients)
        allowance_.push_back(at::zeros_like(gradient));
    }
    for (size_t i = 0; i < golden_gradients.size(); ++i) {
      const at::Tensor difference = (run_gradients[i] - golden_gradients[i]).abs();
      const at::Tensor sensitivity =
          difference.mul(4.0).div(golden_gradients[i].abs().add(optimizer_.eps)).clamp_max(2.0);
      allowance_[i] = allowance_[i] + sensitivity.mul(optimizer_.lr);
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
    for (size_t i = 0; i < step.gradients.size(); ++i) {
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
                     [](const TensorComparison& c) { return c.within_tolerance; });
}

}  // namespace

void judge_training(const Scenario& scenario, const Plan& plan, const Trace& trace,
                    const Golden& golden, TrainingJudgement& judgement) {
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

  AdamAllowance allowance(plan.optimizer);
  const int64_t compared = std::min<int64_t>(scenario.golden.steps, trace.steps.size());
  for (int64_t s = 0; s < compared; ++s) {
    const OptimizerStepRecord& run = trace.steps[s];
    const GoldenStep& reference = golden.steps[s];
    StepJudgement step;
    step.step = s;
    step.micro_step = run.micro_step;
    step.loss = run.loss;
    step.golden_loss = reference.loss;
    allowance.add_step(run.gradients, reference.gradients);
    for (size_t i = 0; i < golden.parameter_names.size(); ++i) {
      const std::string& name = golden.parameter_names[i];
      step.gradients.push_back(
          compare_tensors(name, run.gradients[i], reference.gradients[i], tolerance));
      step.parameters.push_back(compare_tensors(name, run.parameters[i], reference.parameters[i],
                                                tolerance, allowance.for_parameter(i)));
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
    judgement.diagnosis = diagnose_gradient_mismatch(scenario, plan, trace, golden, s);
    judgement.mismatch = "gradients differ from the golden at optimizer step " + std::to_string(s) +
                         ": " + describe_worst(judgement.steps[s].gradients);
  } else if (judgement.first_parameter_mismatch) {
    const int64_t s = *judgement.first_parameter_mismatch;
    judgement.diagnosis = diagnose_parameter_mismatch(plan, s);
    judgement.mismatch = "parameters differ from the golden after optimizer step " +
                         std::to_string(s) + ": " + describe_worst(judgement.steps[s].parameters);
  }
}

Verdict judge_run(const Scenario& scenario, const Plan& plan, const Trace& trace,
                  const Golden& golden, TrainingJudgement& training, MemoryJudgement& memory,
                  ZeroJudgement& zero) {
  judge_training(scenario, plan, trace, golden, training);
  memory = judge_memory(scenario, plan, trace);
  zero = judge_zero(scenario, plan, trace);

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
  verdict.outcome = expected_found && !unexplained_found ? Outcome::reproduced : Outcome::failed;
  return verdict;
}

}  // namespace trainrepro
