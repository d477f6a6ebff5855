#include "harness/verdict/diagnosis_wording.h"

#include <cstdio>

#include "harness/scenario/hf_trainer_release.h"
#include "harness/verdict/batch_fix.h"

namespace trainrepro {
namespace {

std::string number_text(const char* pattern, double value) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// " (norm ratio 0.25)" where the judge measured it.
std::string norm_ratio_said(const DiagnosisFacts& facts) {
  return facts.norm_ratio ? " (norm ratio " + number_text("%.4g", *facts.norm_ratio) + ")" : "";
}

// loss_not_scaled has three causes a watch can tell apart; a scenario's is loss.backward().
std::string explain_loss_not_scaled(const DiagnosisFacts& facts) {
  const std::string g = std::to_string(facts.window_steps);
  const std::string lead = "gradients are " + g + "x the golden's" + norm_ratio_said(facts);
  if (facts.calls && facts.calls->scale_wrt_gas_off) {
    return lead +
           ": the loop passed scale_wrt_gas=False to engine.backward, so DeepSpeed did not "
           "divide by gradient_accumulation_steps=" +
           g +
           ", but each micro-step's loss is its own micro-batch's mean, not its share of the "
           "window's. transformers' Trainer passes scale_wrt_gas=False and divides nothing "
           "itself when the model accepts loss kwargs, trusting compute_loss to divide by "
           "num_items_in_batch (the window's tokens); a custom compute_loss returning the "
           "model's own per-micro-batch loss breaks that. Fix: in compute_loss, sum the token "
           "losses and divide by num_items_in_batch";
  }
  if (facts.calls && facts.calls->direct_backwards == 0) {
    return lead +
           ": the micro-batch losses are summed, not averaged. Fix: let engine.backward(loss) "
           "divide by gradient_accumulation_steps=" +
           g;
  }
  return lead +
         ": the micro-batch losses are summed, not averaged (loss.backward() bypasses "
         "engine.backward's division by gradient_accumulation_steps=" +
         g + "). Fix: call engine.backward(loss)";
}

std::string explain_trainer_boundary_ignored(const DiagnosisFacts& facts) {
  const TrainerLoopSpec& trainer = *facts.trainer;
  const std::string gas = std::to_string(facts.window_steps);
  const std::string window = std::to_string(trainer.gradient_accumulation_steps);
  return "the optimizer stepped after every " +
         (gas == "1" ? std::string("micro-batch") : gas + " micro-batches") + " on 1/" + window +
         " of the gradient: accelerate " + trainer.accelerate_version +
         " calls engine.step() after every backward, so DeepSpeed's own "
         "gradient_accumulation_steps=" +
         gas +
         (facts.config_sets_gradient_accumulation_steps
              ? ""
              : " (the config has no gradient_accumulation_steps key: accelerate inserted 1)") +
         " decides the boundary, while the Trainer counts windows of " + window +
         " micro-batches and divides each micro-batch's loss by " + window +
         " (a token loss by the tokens of the whole window; backward with "
         "scale_wrt_gas=False). Effective batch " +
         std::to_string(facts.effective_batch) + ", not " + std::to_string(facts.intended_batch) +
         ". Fixed in accelerate " + kAccelerateExplicitBoundarySince +
         " (DeepSpeedEngineWrapper.backward passes the Trainer's boundary to "
         "engine.set_gradient_accumulation_boundary): upgrade accelerate, or write "
         "\"gradient_accumulation_steps\": \"auto\" in the config";
}

std::string explain_reentrant_checkpoint(const DiagnosisFacts& facts) {
  // Predicted at the config's batch: when that is not the intended one, say so as well.
  std::string batch_too;
  if (facts.effective_batch != facts.intended_batch) {
    const bool accumulation_missing =
        facts.window_steps == 1 && facts.effective_batch < facts.intended_batch;
    DiagnosisFacts batch_facts = facts;
    batch_facts.lead.clear();
    batch_facts.addendum.clear();
    batch_too = ". Besides: " + explain_diagnosis(accumulation_missing
                                                      ? DiagnosisKind::no_accumulation
                                                      : DiagnosisKind::effective_batch_differs,
                                                  batch_facts);
  }
  return facts.lead +
         " never get a gradient: the model runs each block inside a reentrant checkpoint "
         "(deepspeed.checkpointing.checkpoint, or torch.utils.checkpoint with "
         "use_reentrant=True), which is an autograd function of the block's inputs only. "
         "The first block's input, " +
         (facts.model_has_frozen_layers
              ? std::string("the data or the output of the frozen layers (model.frozen),")
              : std::string("the data,")) +
         " does not require grad, so that checkpoint's "
         "output has no autograd history, and neither has any checkpointed block fed from "
         "it: backward never reaches them and their parameters never train, without an "
         "error as long as a later layer still trains. Fix: "
         "deepspeed.checkpointing.non_reentrant_checkpoint or torch.utils.checkpoint(..., "
         "use_reentrant=False), or make the input require grad before the first checkpoint "
         "(transformers: model.enable_input_require_grads())" +
         batch_too;
}

std::string explain_window_closed_early(const DiagnosisFacts& facts) {
  const std::string g = std::to_string(facts.window_steps);
  const std::string micro = std::to_string(facts.window_micro_steps.value_or(facts.window_steps));
  const bool set_by_loop = facts.calls && facts.calls->boundaries_set_by_loop > 0;
  return "window " + std::to_string(facts.step) + " closed after " + micro +
         " of gradient_accumulation_steps=" + g +
         " micro-batches, yet engine.backward "
         "divided each micro-batch's loss by " +
         g + ", so its gradient is " + micro + "/" + g + " of its batch's mean" +
         norm_ratio_said(facts) + ": that optimizer step is weaker than the others" +
         (set_by_loop ? std::string(". The loop ended the window itself "
                                    "(engine.set_gradient_accumulation_boundary(True)), as "
                                    "accelerate's accumulate() does at the end of the data "
                                    "loader")
                      : std::string()) +
         ". Fix: give every epoch a multiple of " + g +
         " micro-batches per rank (the dataset a multiple of micro batch x " + g +
         " x ranks, or drop_last), or let windows run across epochs (accelerate: "
         "GradientAccumulationPlugin(num_steps=" +
         g +
         ", sync_with_dataloader=False)); "
         "transformers' Trainer divides by the window's own count and passes "
         "scale_wrt_gas=False (transformers PR #35808)";
}

std::string explain_lr_scheduler_stepped_by_loop(const DiagnosisFacts& facts) {
  const std::string cause =
      facts.loop_scheduler_steps
          ? "the loop calls lr_scheduler.step() itself (" +
                std::to_string(*facts.loop_scheduler_steps) + " times in " +
                std::to_string(facts.optimizer_steps_watched) +
                " optimizer steps) while engine.step() steps the same scheduler at every "
                "boundary: the schedule runs ahead"
          : "The loop calls lr_scheduler.step() after every micro-batch while engine.step() "
            "steps the same scheduler at every boundary, so it advances " +
                std::to_string(facts.scheduler_steps_per_step) + " times per optimizer step (" +
                std::to_string(facts.window_steps) + " micro-batches + the engine's 1)";
  return facts.lead + (facts.lead.empty() ? "" : ". ") + cause + facts.schedule_effect +
         ". Fix: remove the loop's lr_scheduler.step(); DeepSpeed steps the scheduler it built "
         "from the config (or was given) inside engine.step(), once per optimizer step";
}

// The table. Facts a watched window adds (its norm ratio, the calls seen) slot into the same
// sentences a scenario's run reads.
std::string explain_kind(DiagnosisKind kind, const DiagnosisFacts& facts) {
  const ResolvedBatch& batch = facts.batch;
  const std::string gas = std::to_string(facts.window_steps);
  const std::string intended = std::to_string(facts.intended_batch);
  const std::string effective = std::to_string(facts.effective_batch);
  const std::string ratio = norm_ratio_said(facts);
  const int64_t micro_steps = facts.window_micro_steps.value_or(facts.window_steps);
  switch (kind) {
    case DiagnosisKind::no_accumulation: {
      std::string why = batch.given.gradient_accumulation_steps
                            ? "gradient_accumulation_steps is 1"
                            : "gradient_accumulation_steps is not set, so DeepSpeed uses 1";
      return "effective batch is " + effective + ", not " + intended + ": " + why +
             " (train_micro_batch_size_per_gpu=" + std::to_string(batch.micro_batch_per_gpu) +
             "); every optimizer step sees one micro-batch. " +
             suggest_batch_fix(batch, facts.intended_batch);
    }
    case DiagnosisKind::effective_batch_differs:
      return "effective batch is " + effective + ", not " + intended +
             ": the config resolves to train_micro_batch_size_per_gpu=" +
             std::to_string(batch.micro_batch_per_gpu) + " x gradient_accumulation_steps=" + gas +
             " x world_size=" + std::to_string(batch.world_size) + ". " +
             suggest_batch_fix(batch, facts.intended_batch) + " (see trainrepro config resolve)";
    case DiagnosisKind::loss_not_scaled:
      return explain_loss_not_scaled(facts);
    case DiagnosisKind::loss_scaled_twice:
      return "gradients are 1/" + gas + " of the golden's" + ratio +
             ": the loss is divided by gradient_accumulation_steps twice, by the training loop "
             "and by engine.backward. Fix: remove the loop's own division; engine.backward "
             "already scales";
    case DiagnosisKind::zeroed_inside_window:
      return "gradients are the last micro-batch's alone" + ratio +
             ": they are zeroed inside the accumulation window" +
             (facts.calls && !facts.calls->zero_grad_calls.empty()
                  ? " (the loop calls " + facts.calls->zero_grad_calls + " every micro-step)"
                  : std::string()) +
             ", so " + std::to_string(micro_steps - 1) + " of " + std::to_string(micro_steps) +
             " micro-batches are lost. Fix: do not call zero_grad() between micro-batches; the "
             "engine zeroes at the boundary";
    case DiagnosisKind::never_zeroed:
      return "step " + std::to_string(facts.step) + "'s gradients are its own plus step " +
             std::to_string(facts.step - 1) +
             "'s: gradients are never zeroed and accumulate across optimizer steps. Fix: zero "
             "gradients after every optimizer step (engine.step() does it)";
    case DiagnosisKind::optimizer_every_micro_step:
      return "the optimizer stepped after the first micro-batch" + ratio +
             ": optimizer.step() is called every micro-step, bypassing accumulation (" + gas +
             " optimizer steps per intended one). Fix: call engine.step() after every backward "
             "and let the engine step the optimizer at the boundary";
    case DiagnosisKind::step_once_per_window:
      return "the accumulation boundary came after " +
             std::to_string(
                 facts.window_micro_steps.value_or(facts.window_steps * facts.window_steps)) +
             " micro-batches, not " + gas + ": engine.step() is called once per window" +
             (facts.calls ? " (" + std::to_string(facts.calls->engine_steps) + " calls for " +
                                std::to_string(micro_steps) + " backwards)"
                          : std::string()) +
             ", but DeepSpeed counts every step() call as a micro-step. Fix: call engine.step() "
             "after every engine.backward()";
    case DiagnosisKind::gradients_not_reduced:
      return "rank 0 stepped on its own gradient alone, not the average of the " +
             std::to_string(batch.world_size) + " ranks'" + ratio +
             ": the boundary's backward ran inside engine.no_sync()" +
             (facts.calls ? " (entered " + std::to_string(facts.calls->no_syncs) + " times for " +
                                std::to_string(micro_steps) + " backwards)"
                          : std::string()) +
             ", which skips DeepSpeed's all-reduce, so each rank updates its replica from its "
             "own " +
             std::to_string(batch.micro_batch_per_gpu * micro_steps) + " of the " + effective +
             " samples and the replicas drift apart. Fix: take the window's last backward out "
             "of no_sync(); at ZeRO 0-1 DeepSpeed reduces only at the boundary anyway, so "
             "no_sync() saves nothing: remove it";
    case DiagnosisKind::gradient_sync_off_at_boundary:
      return "the optimizer stepped on the window's first micro-batch alone: the loop turned "
             "gradient sync on for the first backward of the window and off for the others "
             "(model.set_requires_gradient_sync), so the engine reduce-scattered micro-batch 1 "
             "into the sharded .grad the optimizer steps on and kept the window's other " +
             (facts.window_steps == 2
                  ? std::string("micro-batch's gradient")
                  : std::to_string(facts.window_steps - 1) + " micro-batches' gradients") +
             " in its unsharded parameters, which reach the optimizer only with the next "
             "window's first backward. Fix: sync the window's last backward: "
             "model.set_requires_gradient_sync(micro_step % " +
             gas + " == " + std::to_string(facts.window_steps - 1) + ")";
    case DiagnosisKind::gradients_never_synchronised:
      return "the optimizer got no gradient at step " + std::to_string(facts.step) +
             ": gradient sync was off for every backward (model.set_requires_gradient_sync("
             "False) never turned back on), so the engine kept the gradients in its unsharded "
             "parameters and never reduce-scattered them into the sharded .grad the optimizer "
             "steps on: no parameter was updated. Fix: "
             "model.set_requires_gradient_sync(True) before the window's last backward";
    case DiagnosisKind::trainer_boundary_ignored:
      return explain_trainer_boundary_ignored(facts);
    case DiagnosisKind::unmanaged_gradient_accumulation:
      return "the optimizer stepped after the first micro-batch with 1/" + gas +
             " of its gradient: \"managed_gradient_accumulation\": false makes every "
             "engine.step() an accumulation boundary (DeepSpeed " +
             facts.deepspeed_version +
             "), while engine.backward still divides by gradient_accumulation_steps=" + gas +
             ". Fix: remove \"managed_gradient_accumulation\": false, or call engine.step() "
             "only at the boundaries you manage yourself";
    case DiagnosisKind::clipped_before_unscaling: {
      const std::string max_norm = number_text("%g", facts.clip_grad_norm);
      return "the loop called torch.nn.utils.clip_grad_norm_(model.parameters(), " + max_norm +
             ") before engine.step(): the gradients it saw were still multiplied by the fp16 "
             "loss scale, so it cut them to norm " +
             max_norm + " and DeepSpeed's unscaling then divided them by the scale again: step " +
             std::to_string(facts.step) +
             " used a gradient a loss scale smaller than intended. Fix: remove the manual clip "
             "and set \"gradient_clipping\": " +
             max_norm + " in the DeepSpeed config, which clips after unscaling";
    }
    case DiagnosisKind::backward_in_evaluation:
      return "step " + std::to_string(facts.step) +
             "'s gradients are its own plus the evaluation loss's gradient: the evaluation "
             "before it called backward(), computing gradients where none are needed and "
             "leaving them in .grad for the next training step. Fix: evaluate under "
             "torch.no_grad() and never call backward() on an evaluation loss";
    case DiagnosisKind::reentrant_checkpoint_without_input_grad:
      return explain_reentrant_checkpoint(facts);
    case DiagnosisKind::per_micro_batch_token_normalisation:
      return "gradients equal the average of per-micro-batch token means" + ratio +
             ": each micro-batch's loss is divided by its own token count, which weighs tokens "
             "unequally when sequence lengths vary" +
             (facts.items ? "; the golden divides the window's summed loss by all " +
                                std::to_string(*facts.items) + " tokens of the window"
                          : std::string()) +
             ". Fix: divide the summed token loss by the number of tokens in the whole "
             "accumulated batch (num_items_in_batch)";
    case DiagnosisKind::window_closed_early:  // watch only: a scenario's windows are all whole
      return explain_window_closed_early(facts);
    case DiagnosisKind::scale_wrt_gas_ignored:  // watch only: a DeepSpeed bug, not a habit
      return "the loop passed scale_wrt_gas=False to engine.backward (as transformers' Trainer "
             "does) with a loss already averaged over the window, yet the gradients are 1/" +
             gas + " of the golden's" + ratio +
             ": DeepSpeed divided by "
             "gradient_accumulation_steps=" +
             gas +
             " all the same. DeepSpeed 0.19.8 does so at "
             "ZeRO stage 0 when the loss is the very tensor the engine's forward returned (a "
             "model that computes its loss in its own forward, as Hugging Face models do): the "
             "backward hook it puts on the forward's outputs divides by " +
             gas +
             " before engine.backward's own hook marks the graph as not to be divided "
             "(measured: ZeRO 1-3 scale the loss into a new tensor first and divide nothing). "
             "Fix: pass engine.backward a new tensor (loss * 1.0), or train at ZeRO 1 or above; "
             "with the Trainer, keep average_tokens_across_devices=True (its default), whose "
             "multiplication makes that new tensor";
    case DiagnosisKind::per_rank_token_normalisation:  // watch only: needs each rank's tokens
      return "each rank divides its window's token loss by its own tokens and DeepSpeed "
             "averages the ranks, so a rank with few tokens weighs as much as one with many" +
             ratio + ": the golden divides the window's summed loss by all " +
             std::to_string(facts.items.value_or(0)) +
             " tokens of every rank. Fix: divide by the token count summed over the ranks "
             "(transformers: average_tokens_across_devices=True, its default)";
    case DiagnosisKind::labels_counted_but_not_predicted:  // watch only: needs the labels
      return "the token loss is divided by " + std::to_string(facts.labels_counted) +
             " labels, but the model predicts only " + std::to_string(facts.items.value_or(0)) +
             " of them" + ratio +
             ": a causal language model predicts label i+1 from token i, so the first label "
             "of every row is no target, yet it is counted. transformers' Trainer counts "
             "num_items_in_batch over labels[..., 1:] only when the model's loss_type maps to "
             "ForCausalLMLoss (transformers PR #46204); a model whose class name does not say "
             "ForCausalLM (GPT2LMHeadModel) has loss_type None, is still trained with "
             "ForCausalLMLoss, and is counted over every label. Fix: set "
             "model.loss_type = \"ForCausalLM\" before building the Trainer, or count "
             "labels[..., 1:] in your own compute_loss";
    case DiagnosisKind::lr_scheduler_stepped_every_micro_step:
      return explain_lr_scheduler_stepped_by_loop(facts);
    case DiagnosisKind::training_diverged:  // judged from the trace's values, not a hypothesis
    case DiagnosisKind::scheduler_start_rate_first_group_only:
    case DiagnosisKind::lamb_trust_ratio_over_partition:
    case DiagnosisKind::unscaled_by_grown_scale:
    case DiagnosisKind::overflow_skipped_steps:
    case DiagnosisKind::loss_scale_at_minimum:
    case DiagnosisKind::low_precision_accumulation:  // explain_low_precision_accumulation
    case DiagnosisKind::optimizer_stepped_at_initialization:
    case DiagnosisKind::tensor_memory_leak:
    case DiagnosisKind::host_memory_leak:
    case DiagnosisKind::memory_over_budget:
    case DiagnosisKind::gathered_parameters_kept:
    case DiagnosisKind::model_states_differ_from_zero:
    case DiagnosisKind::traffic_differs_from_zero:
      return "";  // worded by their own judges, from memory, traffic and settings
  }
  return "";
}

}  // namespace

std::string explain_diagnosis(DiagnosisKind kind, const DiagnosisFacts& facts) {
  const std::string text = explain_kind(kind, facts);
  // The lead of reentrant checkpointing and of the scheduler is inside their sentences.
  return text.empty() ? text : text + facts.addendum;
}

std::string explain_unexplained_mismatch(int64_t step, const std::vector<HypothesisResult>& tested,
                                         std::optional<double> norm_ratio,
                                         std::optional<double> cosine) {
  std::string names;
  for (const HypothesisResult& result : tested) {
    names += (names.empty() ? "" : ", ") +
             std::string(spelling_of(result.kind, diagnosis_spellings())) +
             number_text(" (relative error %.2g)", result.relative_error);
  }
  const std::string measured = norm_ratio && cosine
                                   ? " (norm ratio " + number_text("%.4g", *norm_ratio) +
                                         ", cosine " + number_text("%.6f", *cosine) + ")"
                                   : std::string();
  return "gradients differ from the golden at step " + std::to_string(step) + measured +
         " and no known cause explains it; tested: " + (names.empty() ? "none applicable" : names);
}

std::string explain_low_precision_accumulation(double error, double twin_error, int64_t micro_steps,
                                               const std::string& dtype, int64_t zero_stage,
                                               const std::string& deepspeed_version) {
  const std::string fix =
      zero_stage == 0
          ? "DeepSpeed " + deepspeed_version + " refuses it at ZeRO stage 0: use stage 1 or 2"
      : zero_stage == 1 ? std::string("at ZeRO stage 1 DeepSpeed then uses BF16_Optimizer")
                        : std::string("DeepSpeed then keeps float32 gradients");
  return "gradients follow DeepSpeed's accumulation (relative error " + number_text("%.3g", error) +
         " against the golden, nearer than any fault tested) but carry " +
         number_text("%.3g", twin_error > 0.0 ? error / twin_error : 0.0) + "x the " + dtype +
         " precision twin's error (" + number_text("%.3g", twin_error) +
         "): " + std::to_string(micro_steps) + " micro-steps were summed in " + dtype +
         ", rounding the running sum at every micro-step. Fix: accumulate in float32 with "
         "\"data_types\": {\"grad_accum_dtype\": \"fp32\"} (" +
         fix + "), or accumulate fewer micro-steps";
}

}  // namespace trainrepro
