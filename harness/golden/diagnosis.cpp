#include "harness/golden/diagnosis.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/loop/training_loop.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

using Gradients = std::vector<at::Tensor>;

// How close a prediction must be to count as the explanation: float64 runs reproduce a
// hypothesis to ~1e-12; float32 accumulation leaves ~1e-6 relative noise.
double match_threshold(EngineDtype dtype) { return dtype == EngineDtype::float64 ? 1e-8 : 1e-4; }

double norm_of(const Gradients& tensors) {
  double squared = 0.0;
  for (const at::Tensor& tensor : tensors) squared += tensor.pow(2).sum().item<double>();
  return std::sqrt(squared);
}

double relative_error(const Gradients& observed, const Gradients& predicted) {
  double squared = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    squared += (observed[i] - predicted[i]).pow(2).sum().item<double>();
  }
  return std::sqrt(squared) / std::max(norm_of(predicted), 1e-300);
}

Gradients scaled(const Gradients& tensors, double factor) {
  Gradients result;
  for (const at::Tensor& tensor : tensors) result.push_back(tensor * factor);
  return result;
}

Gradients summed(const Gradients& a, const Gradients& b) {
  Gradients result;
  for (size_t i = 0; i < a.size(); ++i) result.push_back(a[i] + b[i]);
  return result;
}

std::string format(const char* pattern, double value) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Gradients of the summed loss over samples [begin, end) at the golden's parameters, float64.
class ReferenceGradients {
 public:
  ReferenceGradients(const Scenario& scenario, const std::vector<at::Tensor>& parameters)
      : model_(build_model(scenario.model, at::kDouble, at::kCPU)), source_(scenario.data) {
    c10::NoGradGuard no_grad;
    size_t i = 0;
    for (auto& item : model_->named_parameters(/*recurse=*/true)) {
      item.value().copy_(parameters.at(i++));
    }
  }

  // Returns the gradient of the *summed* per-item loss and sets `items`.
  Gradients of_sum(int64_t begin, int64_t end, int64_t& items) {
    model_->zero_grad();
    const Batch batch = source_.samples(begin, end, at::kDouble, at::kCPU);
    model_->loss_sum(batch).backward();
    items = batch.items;
    Gradients gradients;
    for (auto& item : model_->named_parameters(/*recurse=*/true)) {
      const at::Tensor gradient = item.value().grad();
      gradients.push_back(gradient.defined() ? gradient.detach().clone()
                                             : at::zeros_like(item.value()));
    }
    return gradients;
  }

 private:
  std::shared_ptr<ZooModel> model_;
  SampleSource source_;
};

struct Hypothesis {
  DiagnosisKind kind;
  Gradients predicted;
};

std::string explain(DiagnosisKind kind, const Scenario& scenario, const Plan& plan, int64_t step) {
  const ResolvedBatch& batch = plan.batch;
  const std::string gas = std::to_string(batch.gradient_accumulation_steps);
  const std::string intended = std::to_string(scenario.golden.train_batch_size);
  const std::string effective = std::to_string(batch.train_batch_size);
  switch (kind) {
    case DiagnosisKind::no_accumulation: {
      const int64_t needed =
          scenario.golden.train_batch_size / (batch.micro_batch_per_gpu * batch.world_size);
      std::string why = batch.given.gradient_accumulation_steps
                            ? "gradient_accumulation_steps is 1"
                            : "gradient_accumulation_steps is not set, so DeepSpeed uses 1";
      return "effective batch is " + effective + ", not " + intended + ": " + why +
             " (train_micro_batch_size_per_gpu=" + std::to_string(batch.micro_batch_per_gpu) +
             "); every optimizer step sees one micro-batch. Fix: set "
             "\"gradient_accumulation_steps\": " +
             std::to_string(needed) + " or \"train_batch_size\": " + intended +
             " in the DeepSpeed config";
    }
    case DiagnosisKind::effective_batch_differs:
      return "effective batch is " + effective + ", not " + intended +
             ": the config resolves to train_micro_batch_size_per_gpu=" +
             std::to_string(batch.micro_batch_per_gpu) + " x gradient_accumulation_steps=" + gas +
             " x world_size=" + std::to_string(batch.world_size) + ". Fix: make train_batch_size " +
             intended + " (see trainrepro config resolve)";
    case DiagnosisKind::loss_not_scaled:
      return "gradients are " + gas +
             "x the golden's: the micro-batch losses are summed, not "
             "averaged (loss.backward() bypasses engine.backward's division by "
             "gradient_accumulation_steps=" +
             gas + "). Fix: call engine.backward(loss)";
    case DiagnosisKind::loss_scaled_twice:
      return "gradients are 1/" + gas +
             " of the golden's: the loss is divided by "
             "gradient_accumulation_steps twice, by the training loop and by engine.backward. "
             "Fix: remove the loop's own division; engine.backward already scales";
    case DiagnosisKind::zeroed_inside_window:
      return "gradients are the last micro-batch's alone: they are zeroed inside the "
             "accumulation window, so " +
             std::to_string(batch.gradient_accumulation_steps - 1) + " of " + gas +
             " micro-batches are lost. Fix: do not call zero_grad() between "
             "micro-batches; the engine zeroes at the boundary";
    case DiagnosisKind::never_zeroed:
      return "step " + std::to_string(step) + "'s gradients are its own plus step " +
             std::to_string(step - 1) +
             "'s: gradients are never zeroed and accumulate across "
             "optimizer steps. Fix: zero gradients after every optimizer step (engine.step() "
             "does it)";
    case DiagnosisKind::optimizer_every_micro_step:
      return "the optimizer stepped after the first micro-batch: optimizer.step() is called "
             "every micro-step, bypassing accumulation (" +
             gas +
             " optimizer steps per "
             "intended one). Fix: call engine.step() after every backward and let the engine "
             "step the optimizer at the boundary";
    case DiagnosisKind::step_once_per_window:
      return "the accumulation boundary came after " +
             std::to_string(batch.gradient_accumulation_steps * batch.gradient_accumulation_steps) +
             " micro-batches, not " + gas +
             ": engine.step() is called once per window, but "
             "DeepSpeed counts every step() call as a micro-step. Fix: call engine.step() after "
             "every engine.backward()";
    case DiagnosisKind::backward_in_evaluation:
      return "step " + std::to_string(step) +
             "'s gradients are its own plus the evaluation "
             "loss's gradient: the evaluation before it called backward(), computing gradients "
             "where none are needed and leaving them in .grad for the next training step. Fix: "
             "evaluate under torch.no_grad() and never call backward() on an evaluation loss";
    case DiagnosisKind::tensor_memory_leak:
    case DiagnosisKind::host_memory_leak:
    case DiagnosisKind::memory_over_budget:
    case DiagnosisKind::gathered_parameters_kept:
    case DiagnosisKind::model_states_differ_from_zero:
    case DiagnosisKind::traffic_differs_from_zero:
      return "";  // judged from memory and traffic, never from gradients
    case DiagnosisKind::per_micro_batch_token_normalisation:
      return "gradients equal the average of per-micro-batch token means: each micro-batch's "
             "loss is divided by its own token count, which weighs tokens unequally when "
             "sequence lengths vary. Fix: divide the summed token loss by the number of tokens "
             "in the whole accumulated batch (num_items_in_batch)";
  }
  return "";
}

std::vector<Hypothesis> build_hypotheses(const Scenario& scenario, const Plan& plan,
                                         const Trace& trace, const Golden& golden, int64_t step) {
  const std::vector<at::Tensor>& parameters_before =
      step == 0 ? golden.initial_parameters : golden.steps[step - 1].parameters;
  ReferenceGradients reference(scenario, parameters_before);
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  // Across W data-parallel ranks, micro-step k of every rank together is one global micro-batch
  // of W x MB consecutive samples (the engine averages the ranks' gradients).
  const int64_t micro = plan.batch.micro_batch_per_gpu * plan.batch.world_size;
  const int64_t first = step * gas;  // the window's first micro-batch, as the correct loop has it

  // Per micro-batch: gradient of the summed loss, and its items; then each micro-batch's
  // contribution under the correct normalisation (divided by the whole window's items).
  std::vector<Gradients> sums;
  std::vector<int64_t> items;
  int64_t window_items = 0;
  for (int64_t k = 0; k < gas; ++k) {
    int64_t count = 0;
    sums.push_back(reference.of_sum((first + k) * micro, (first + k + 1) * micro, count));
    items.push_back(count);
    window_items += count;
  }
  Gradients window = scaled(sums[0], 0.0);
  Gradients per_micro_mean = scaled(sums[0], 0.0);
  for (int64_t k = 0; k < gas; ++k) {
    window = summed(window, scaled(sums[k], 1.0 / window_items));
    per_micro_mean = summed(per_micro_mean, scaled(sums[k], 1.0 / (items[k] * gas)));
  }

  std::vector<Hypothesis> hypotheses;
  if (plan.batch.train_batch_size != scenario.golden.train_batch_size) {
    const bool no_accumulation =
        gas == 1 && plan.batch.train_batch_size < scenario.golden.train_batch_size;
    hypotheses.push_back(
        {no_accumulation ? DiagnosisKind::no_accumulation : DiagnosisKind::effective_batch_differs,
         window});
  }
  if (gas > 1) {
    hypotheses.push_back({DiagnosisKind::loss_not_scaled, scaled(window, gas)});
    hypotheses.push_back({DiagnosisKind::loss_scaled_twice, scaled(window, 1.0 / gas)});
    hypotheses.push_back(
        {DiagnosisKind::zeroed_inside_window, scaled(sums[gas - 1], 1.0 / window_items)});
    hypotheses.push_back(
        {DiagnosisKind::optimizer_every_micro_step, scaled(sums[0], 1.0 / window_items)});
    // The boundary after GAS windows: each window's mean gradient, summed.
    Gradients many_windows = window;
    for (int64_t w = 1; w < gas; ++w) {
      int64_t count = 0;
      const Gradients sum =
          reference.of_sum((first + w * gas) * micro, (first + (w + 1) * gas) * micro, count);
      many_windows = summed(many_windows, scaled(sum, 1.0 / count));
    }
    hypotheses.push_back({DiagnosisKind::step_once_per_window, many_windows});
    if (golden.data.mask.defined()) {
      hypotheses.push_back({DiagnosisKind::per_micro_batch_token_normalisation, per_micro_mean});
    }
  }
  // An evaluation that called backward() just before this step left its gradients behind.
  const auto& evaluation = scenario.loop.evaluation;
  if (evaluation && step > 0 && step % evaluation->every == 0) {
    Gradients predicted = golden.steps[step].gradients;
    const int64_t evaluation_index = step / evaluation->every - 1;
    for (int64_t b = 0; b < evaluation->batches; ++b) {
      const int64_t begin =
          evaluation_first_sample(evaluation_index, b, evaluation->batches, micro);
      int64_t count = 0;
      const Gradients sum = reference.of_sum(begin, begin + micro, count);
      predicted = summed(predicted, scaled(sum, 1.0 / count));
    }
    hypotheses.push_back({DiagnosisKind::backward_in_evaluation, predicted});
  }
  if (step > 0) {
    hypotheses.push_back({DiagnosisKind::never_zeroed,
                          summed(golden.steps[step].gradients, trace.steps[step - 1].gradients)});
  }
  return hypotheses;
}

}  // namespace

Diagnosis diagnose_gradient_mismatch(const Scenario& scenario, const Plan& plan, const Trace& trace,
                                     const Golden& golden, int64_t step) {
  Diagnosis diagnosis;
  diagnosis.step = step;
  const Gradients& observed = trace.steps[step].gradients;
  double best_error = std::numeric_limits<double>::infinity();
  for (const Hypothesis& hypothesis : build_hypotheses(scenario, plan, trace, golden, step)) {
    const double error = relative_error(observed, hypothesis.predicted);
    diagnosis.tested.push_back({hypothesis.kind, error});
    if (error < best_error) {
      best_error = error;
      if (error <= match_threshold(plan.dtype)) diagnosis.kind = hypothesis.kind;
    }
  }
  if (diagnosis.kind) {
    diagnosis.explanation = explain(*diagnosis.kind, scenario, plan, step) +
                            format(" (matched to a relative error of %.1e)", best_error);
    return diagnosis;
  }
  std::string tested;
  for (const HypothesisResult& result : diagnosis.tested) {
    tested += (tested.empty() ? "" : ", ") +
              std::string(spelling_of(result.kind, diagnosis_spellings())) +
              format(" (relative error %.2g)", result.relative_error);
  }
  diagnosis.explanation =
      "gradients differ from the golden at step " + std::to_string(step) +
      " and no known cause explains it; tested: " + (tested.empty() ? "none applicable" : tested);
  return diagnosis;
}

Diagnosis diagnose_parameter_mismatch(const Plan& plan, int64_t step) {
  Diagnosis diagnosis;
  diagnosis.step = step;
  diagnosis.explanation =
      "gradients match the golden but parameters after step " + std::to_string(step) +
      " do not: the optimizer update itself differs (optimizer " +
      spelling_of(plan.optimizer.kind, optimizer_spellings()) + ", lr " +
      format("%g", plan.optimizer.lr) + "); check the optimizer settings and its state";
  return diagnosis;
}

}  // namespace trainrepro
