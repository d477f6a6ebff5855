#include "harness/verdict/diagnosis.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <utility>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/golden/gradient_arithmetic.h"
#include "harness/loop/sample_assignment.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {


constexpr int64_t kMaxStepOncePerWindowBackwards = 16384;

// How close a prediction must be to count as the explanation: float64 runs reproduce a
// hypothesis to ~1e-12; float32 accumulation leaves ~1e-6 relative noise.
double match_threshold(EngineDtype dtype) { return dtype == EngineDtype::float64 ? 1e-8 : 1e-4; }

std::string format(const char* pattern, double value) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Gradients of the summed loss over samples [begin, end) at the golden's parameters, float64.
class ReferenceGradients {
 public:
  // `checkpointing`: how the model's forward checkpoints its blocks (the loop's habit); only
  // reentrant checkpointing changes which parameters get a gradient.
  ReferenceGradients(const Scenario& scenario, const std::vector<at::Tensor>& parameters,
                     ActivationCheckpointing checkpointing = ActivationCheckpointing::none)
      : model_(build_model(scenario.model, at::kDouble, at::kCPU)), source_(scenario.data) {
    model_->set_activation_checkpointing(checkpointing);
    c10::NoGradGuard no_grad;
    // The golden records the trainable parameters; frozen ones keep their seeded values.
    size_t i = 0;
    for (auto& [name, parameter] : model_->trainable_named_parameters()) {
      parameter.copy_(parameters.at(i++));
    }
  }

  // Returns the gradient of the *summed* per-item loss and sets `items`.
  Gradients of_sum(int64_t begin, int64_t end, int64_t& items) {
    model_->zero_grad();
    const Batch batch = source_.samples(begin, end, at::kDouble, at::kCPU);
    model_->loss_sum(batch).backward();
    items = batch.items;
    Gradients gradients;
    for (auto& [name, parameter] : model_->trainable_named_parameters()) {
      const at::Tensor gradient = parameter.grad();
      gradients.push_back(gradient.defined() ? gradient.detach().clone()
                                             : at::zeros_like(parameter));
    }
    return gradients;
  }

 private:
  std::shared_ptr<ZooModel> model_;
  SampleSource source_;
};

struct Hypothesis {
  Hypothesis(DiagnosisKind kind, Gradients predicted, bool from_config = false,
             std::string specifics = "")
      : kind(kind),
        predicted(std::move(predicted)),
        from_config(from_config),
        specifics(std::move(specifics)) {}
  DiagnosisKind kind;
  Gradients predicted;
  // Explained by the config itself (the batch keys, managed accumulation): where two
  // hypotheses predict the same gradient, the one the config shows wins.
  bool from_config;
  std::string specifics;  // what this prediction found, for the explanation (names, figures)
};

// What a scenario's run tells the wording table (diagnosis_wording.h): its config, its loop's
// settings and the step diagnosed; a scenario's loop is known from its file, not watched.
DiagnosisFacts facts_of(const Scenario& scenario, const Plan& plan, int64_t step,
                        const std::string& specifics) {
  DiagnosisFacts facts;
  facts.step = step;
  // Micro-batches per optimizer step (the Trainer's window where it holds the boundary).
  facts.window_steps = accumulation_window(plan);
  facts.batch = plan.batch;
  facts.effective_batch = effective_train_batch(plan);
  facts.intended_batch = scenario.golden.train_batch_size;
  facts.deepspeed_version = plan.deepspeed_version;
  facts.lead = specifics;
  facts.trainer = plan.trainer;
  facts.config_sets_gradient_accumulation_steps =
      scenario.deepspeed.verbatim.contains("gradient_accumulation_steps");
  facts.model_has_frozen_layers = !scenario.model.frozen.empty();
  facts.clip_grad_norm = scenario.loop.clip_grad_norm;
  return facts;
}

// One accumulation window as every rank saw it: per rank and micro-step, the gradient of the
// summed per-item loss over that rank's micro-batch, and its items.
struct RankWindow {
  std::vector<std::vector<Gradients>> sums;  // [rank][micro-step]
  std::vector<std::vector<int64_t>> items;   // [rank][micro-step]
  int64_t total_items = 0;                   // every rank, every micro-step
};

RankWindow window_of(ReferenceGradients& reference, const SampleAssignment& samples,
                     int64_t first_micro_step, int64_t gas) {
  RankWindow window;
  window.sums.resize(samples.world_size);
  window.items.resize(samples.world_size);
  for (int64_t r = 0; r < samples.world_size; ++r) {
    for (int64_t k = 0; k < gas; ++k) {
      const SampleRange range = samples.micro_batch_of(first_micro_step + k, r);
      int64_t count = 0;
      window.sums[r].push_back(reference.of_sum(range.begin, range.end, count));
      window.items[r].push_back(count);
      window.total_items += count;
    }
  }
  return window;
}

// How the user's loop normalises one micro-batch's summed loss.
enum class Normalised {
  by_window_items,  // by the window's items on this rank (all ranks' items / W), times GAS
  by_own_items,     // by the micro-batch's own items
};

// What rank 0 holds after the backwards of micro-steps [begin, end) of the window: each rank's
// gradient of its own loss, normalised as the loop does, times `scale` (1/GAS through
// engine.backward, 1 through loss.backward()); then what crosses ranks: averaged when the
// engine reduced them (a boundary reached inside engine.backward), otherwise rank 0's own.
Gradients rank_zero_holds(const RankWindow& window, Normalised normalised, double scale,
                          bool reduced, int64_t begin, int64_t end) {
  const int64_t ranks = static_cast<int64_t>(window.sums.size());
  const int64_t gas = static_cast<int64_t>(window.sums[0].size());
  const double window_items_per_rank = static_cast<double>(window.total_items) / ranks;
  Gradients held = scaled(window.sums[0][0], 0.0);
  for (int64_t r = 0; r < (reduced ? ranks : 1); ++r) {
    for (int64_t k = begin; k < end; ++k) {
      const double normaliser = normalised == Normalised::by_window_items
                                    ? window_items_per_rank / static_cast<double>(gas)
                                    : static_cast<double>(window.items[r][k]);
      const double average = reduced ? 1.0 / ranks : 1.0;
      held = summed(held, scaled(window.sums[r][k], scale * average / normaliser));
    }
  }
  return held;
}

// The Trainer under accelerate before 1.8.0: engine.step() after every backward, so DeepSpeed's
// own GAS (1 when accelerate inserted it) makes the boundary, while the Trainer still divides
// each micro-batch's loss by its window of G (or normalises tokens over that window). Optimizer
// step `step` is micro-batches [step·GAS, (step+1)·GAS), each reduced across ranks.
Gradients trainer_steps_by_deepspeed_gas(ReferenceGradients& reference,
                                         const SampleAssignment& samples, const Plan& plan,
                                         int64_t step) {
  const int64_t deepspeed_gas = plan.batch.gradient_accumulation_steps;
  const int64_t window = plan.trainer->gradient_accumulation_steps;
  Gradients held;
  for (int64_t m = step * deepspeed_gas; m < (step + 1) * deepspeed_gas; ++m) {
    const int64_t window_start = m / window * window;
    const RankWindow trainer_window = window_of(reference, samples, window_start, window);
    const Gradients share =
        rank_zero_holds(trainer_window, Normalised::by_window_items,
                        1.0 / static_cast<double>(window), /*reduced=*/true, m - window_start,
                        m - window_start + 1);
    held = held.empty() ? share : summed(held, share);
  }
  return held;
}

// Each hypothesis models what every rank's loop does, then what the engine sends across ranks:
// engine.backward reduces at the boundary, loss.backward() and optimizer.step() never do.
std::vector<Hypothesis> build_hypotheses(const Scenario& scenario, const Plan& plan,
                                         const Trace& trace, const Golden& golden, int64_t step) {
  const std::vector<at::Tensor>& parameters_before =
      step == 0 ? golden.initial_parameters : golden.steps[step - 1].parameters;
  ReferenceGradients reference(scenario, parameters_before);
  // Micro-batches per optimizer step: under the Hugging Face Trainer with the explicit boundary,
  // its window, whatever GAS DeepSpeed resolved.
  const int64_t gas = accumulation_window(plan);
  const SampleAssignment samples{plan.batch.micro_batch_per_gpu, plan.batch.world_size};
  const int64_t first = step * gas;  // the window's first micro-step, as the correct loop has it
  const RankWindow window = window_of(reference, samples, first, gas);
  const double engine_scale = 1.0 / static_cast<double>(gas);
  const Gradients correct = rank_zero_holds(window, Normalised::by_window_items, engine_scale,
                                            /*reduced=*/true, 0, gas);

  std::vector<Hypothesis> hypotheses;
  // Where the engine reduces (the trace says): at its accumulation boundary, as DeepSpeed does,
  // or at every backward with sync on, as FSDP2 does.
  const bool synced_backward_reduces =
      trace.gradient_reduction == GradientReduction::at_each_synced_backward;
  // The boundary's backward inside DeepSpeed's no_sync(): every micro-batch of rank 0, scaled
  // by engine.backward, never averaged (on one rank that is the correct gradient).
  if (!synced_backward_reduces && samples.world_size > 1) {
    hypotheses.push_back({DiagnosisKind::gradients_not_reduced,
                          rank_zero_holds(window, Normalised::by_window_items, engine_scale,
                                          /*reduced=*/false, 0, gas)});
  }
  // FSDP2 with sync never on: the sharded .grad the optimizer holds stays empty (recorded as
  // zeros), at any GAS. A zero prediction can match a zero gradient only: tested only there.
  if (synced_backward_reduces && norm_of(trace.steps[step].gradients) == 0.0) {
    hypotheses.push_back({DiagnosisKind::gradients_never_synchronised, scaled(correct, 0.0)});
  }
  const int64_t effective_batch = effective_train_batch(plan);
  if (effective_batch != scenario.golden.train_batch_size) {
    const bool no_accumulation = gas == 1 && effective_batch < scenario.golden.train_batch_size;
    hypotheses.push_back(
        {no_accumulation ? DiagnosisKind::no_accumulation : DiagnosisKind::effective_batch_differs,
         correct, /*from_config=*/true});
  }
  if (plan.trainer && !plan.trainer->explicit_boundary &&
      plan.trainer->gradient_accumulation_steps != gas) {
    hypotheses.push_back({DiagnosisKind::trainer_boundary_ignored,
                          trainer_steps_by_deepspeed_gas(reference, samples, plan, step),
                          /*from_config=*/true});
  }
  if (gas > 1) {
    // loss.backward(): no 1/GAS and no reduction across ranks.
    hypotheses.push_back(
        {DiagnosisKind::loss_not_scaled,
         rank_zero_holds(window, Normalised::by_window_items, 1.0, /*reduced=*/false, 0, gas)});
    hypotheses.push_back({DiagnosisKind::loss_scaled_twice, scaled(correct, engine_scale)});
    // Zeroed before every backward: the boundary's reduction sees the last micro-batch only.
    hypotheses.push_back({DiagnosisKind::zeroed_inside_window,
                          rank_zero_holds(window, Normalised::by_window_items, engine_scale,
                                          /*reduced=*/true, gas - 1, gas)});
    // optimizer.step() after the first backward, before any boundary: rank 0's own gradient
    // (FSDP2's loop syncs every micro-step then: reduced). Only where the trace shows the
    // optimizer stepping before the window's last backward: FSDP2's sync left off at the
    // boundary predicts the same gradient, stepped at the window's end.
    const bool stepped_inside_window = trace.steps[step].micro_step < (step + 1) * gas;
    if (stepped_inside_window) {
      hypotheses.push_back({DiagnosisKind::optimizer_every_micro_step,
                            rank_zero_holds(window, Normalised::by_window_items, engine_scale,
                                            /*reduced=*/synced_backward_reduces, 0, 1)});
    }
    // FSDP2, sync on for the window's first backward only: that micro-batch, reduced.
    if (synced_backward_reduces && !stepped_inside_window) {
      hypotheses.push_back({DiagnosisKind::gradient_sync_off_at_boundary,
                            rank_zero_holds(window, Normalised::by_window_items, engine_scale,
                                            /*reduced=*/true, 0, 1)});
    }
    // The boundary after GAS windows: each window's correct gradient, summed. That costs GAS²
    // reference backwards per rank; beyond kMaxStepOncePerWindowBackwards (GAS 128) it is not
    // tested: a GAS-512 run would wait minutes for one hypothesis.
    if (gas * gas * samples.world_size <= kMaxStepOncePerWindowBackwards) {
      Gradients many_windows = correct;
      for (int64_t w = 1; w < gas; ++w) {
        const RankWindow later = window_of(reference, samples, first + w * gas, gas);
        many_windows =
            summed(many_windows, rank_zero_holds(later, Normalised::by_window_items,
                                                 engine_scale, /*reduced=*/true, 0, gas));
      }
      hypotheses.push_back({DiagnosisKind::step_once_per_window, many_windows});
    }
    // Unmanaged accumulation: the first step() after one backward is a boundary, reduced.
    if (!plan.managed_gradient_accumulation) {
      hypotheses.push_back({DiagnosisKind::unmanaged_gradient_accumulation,
                            rank_zero_holds(window, Normalised::by_window_items, engine_scale,
                                            /*reduced=*/true, 0, 1),
                            /*from_config=*/true});
    }
  }
  // The loop's own clip_grad_norm_ before engine.step(): it saw the window's gradient times the
  // loss scale and cut that to max_norm; the precision wrapper then divided by the scale again.
  if (scenario.loop.clip_grad_norm > 0.0) {
    const double scaled_norm = norm_of(correct) * trace.steps[step].loss_scale;
    const double coefficient =
        std::min(1.0, scenario.loop.clip_grad_norm / (scaled_norm + 1e-6));
    hypotheses.push_back({DiagnosisKind::clipped_before_unscaling, scaled(correct, coefficient),
                          /*from_config=*/true});
  }
  // Each rank's micro-batch averaged over its own tokens: wrong whenever more than one
  // micro-batch (across steps or across ranks) makes up the batch and lengths vary.
  if (golden.data.mask.defined() && (gas > 1 || plan.batch.world_size > 1)) {
    hypotheses.push_back({DiagnosisKind::per_micro_batch_token_normalisation,
                          rank_zero_holds(window, Normalised::by_own_items, engine_scale,
                                          /*reduced=*/true, 0, gas)});
  }
  // An evaluation that called backward() just before this step left its gradients behind; every
  // rank evaluates the same samples, so averaging across ranks leaves them as they are.
  const auto& evaluation = scenario.loop.evaluation;
  if (evaluation && step > 0 && step % evaluation->every == 0) {
    Gradients predicted = golden.steps[step].gradients;
    const int64_t evaluation_index = step / evaluation->every - 1;
    for (int64_t b = 0; b < evaluation->batches; ++b) {
      const SampleRange range = samples.evaluation_batch(evaluation_index, b, evaluation->batches);
      int64_t count = 0;
      const Gradients sum = reference.of_sum(range.begin, range.end, count);
      predicted = summed(predicted, scaled(sum, 1.0 / count));
    }
    hypotheses.push_back({DiagnosisKind::backward_in_evaluation, predicted});
  }
  // A reentrant checkpoint of a block whose input has no history: the same window through a
  // reentrant-checkpointed float64 model; what it leaves without a gradient is named.
  if (scenario.loop.activation_checkpointing == ActivationCheckpointing::reentrant) {
    ReferenceGradients checkpointed(scenario, parameters_before, ActivationCheckpointing::reentrant);
    const RankWindow checkpointed_window = window_of(checkpointed, samples, first, gas);
    Gradients predicted = rank_zero_holds(checkpointed_window, Normalised::by_window_items,
                                          engine_scale, /*reduced=*/true, 0, gas);
    std::string without_gradient;
    for (size_t i = 0; i < predicted.size(); ++i) {
      if (predicted[i].abs().max().item<double>() == 0.0 &&
          correct[i].abs().max().item<double>() != 0.0) {
        without_gradient += (without_gradient.empty() ? "" : ", ") + golden.parameter_names[i];
      }
    }
    if (!without_gradient.empty()) {
      hypotheses.push_back({DiagnosisKind::reentrant_checkpoint_without_input_grad,
                            std::move(predicted), /*from_config=*/false, without_gradient});
    }
  }
  // Never zeroed: the loop steps the optimizer itself and never calls engine.step(), so the
  // engine reaches a boundary (and reduces) only when every backward is one (GAS 1).
  if (step > 0) {
    const Gradients this_window = rank_zero_holds(window, Normalised::by_window_items, engine_scale,
                                                  /*reduced=*/gas == 1, 0, gas);
    hypotheses.push_back(
        {DiagnosisKind::never_zeroed, summed(this_window, trace.steps[step - 1].gradients)});
  }
  return hypotheses;
}

}  // namespace

Diagnosis diagnose_gradient_mismatch(const Scenario& scenario, const Plan& plan, const Trace& trace,
                                     const Golden& golden, int64_t step, double noise) {
  Diagnosis diagnosis;
  diagnosis.step = step;
  const Gradients& observed = trace.steps[step].gradients;
  double best_error = std::numeric_limits<double>::infinity();
  bool best_from_config = false;
  std::string best_specifics;
  for (const Hypothesis& hypothesis : build_hypotheses(scenario, plan, trace, golden, step)) {
    const double error = relative_error(observed, hypothesis.predicted);
    diagnosis.tested.push_back({hypothesis.kind, error});
    const bool matches =
        error <= std::max(match_threshold(plan.dtype), kPrecisionTwinFactor * noise);
    // Among matching hypotheses the config's own explanation wins, then the closest.
    const bool better = matches && diagnosis.kind
                            ? (hypothesis.from_config && !best_from_config) ||
                                  (hypothesis.from_config == best_from_config && error < best_error)
                            : error < best_error;
    if (better) {
      best_error = error;
      if (matches) {
        diagnosis.kind = hypothesis.kind;
        best_from_config = hypothesis.from_config;
        best_specifics = hypothesis.specifics;
      }
    }
  }
  if (diagnosis.kind) {
    diagnosis.explanation =
        explain_diagnosis(*diagnosis.kind, facts_of(scenario, plan, step, best_specifics)) +
        format(" (matched to a relative error of %.1e)", best_error);
    return diagnosis;
  }
  diagnosis.explanation = explain_unexplained_mismatch(step, diagnosis.tested);
  return diagnosis;
}

double gradients_relative_error(const Gradients& observed, const Gradients& predicted) {
  return relative_error(observed, predicted);
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
