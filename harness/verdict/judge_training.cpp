#include "harness/verdict/judge_training.h"

#include <algorithm>
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

  const bool gradient_first =
      judgement.first_gradient_mismatch &&
      (!judgement.first_parameter_mismatch ||
       *judgement.first_gradient_mismatch <= *judgement.first_parameter_mismatch);
  if (gradient_first) {
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
                         ? "; memory bounded (tensors " +
                               format_bytes(memory.tensor.bytes_per_step) + "/step, host heap " +
                               format_bytes(memory.host.bytes_per_step) + "/step)"
                         : "";
    if (zero.judged) {
      verdict.found += "; model states " + format_bytes(zero.measured.total()) + " (" +
                       std::to_string(zero.model_states_ratio).substr(0, 5) +
                       "x the ZeRO formula), sent " + format_bytes(zero.bytes_sent_per_step) +
                       "/step (" + std::to_string(zero.traffic_ratio).substr(0, 5) + "x)";
    }
    if (!memory.notes.empty()) verdict.found += "; " + memory.notes;
    verdict.outcome = scenario.expect.outcome == ExpectedOutcome::pass ? Outcome::passed
                                                                       : Outcome::not_reproduced;
    return verdict;
  }
  verdict.found = join(found);
  verdict.diagnosis = join(explanations);
  if (!memory.notes.empty()) verdict.found += "; " + memory.notes;
  const bool expected_found =
      scenario.expect.outcome == ExpectedOutcome::diagnosis &&
      std::find(kinds.begin(), kinds.end(), scenario.expect.diagnosis) != kinds.end();
  verdict.outcome = expected_found ? Outcome::reproduced : Outcome::failed;
  return verdict;
}

}  // namespace trainrepro
