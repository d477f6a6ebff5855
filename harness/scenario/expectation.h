// What a scenario expects: to pass (a regression scenario), or a named failure (a
// reproduction scenario): a DeepSpeed config error, or a wrong-training diagnosis.
#pragma once
#include <optional>

#include "harness/scenario/config_error.h"
#include "harness/json/json_fields.h"

namespace trainrepro {

// failure: a mismatch with the golden, whatever explains it. Only "reproduced_as" in
// "deepspeed_releases" asks for it (a DeepSpeed bug whose symptom no diagnosis names yet); a
// scenario's own "expect" names what it expects.
enum class ExpectedOutcome { pass, config_error, diagnosis, failure };

// The named explanations of a gradient mismatch that a reproduction scenario can expect.
enum class DiagnosisKind {
  no_accumulation,                  // effective batch = micro batch (GAS not set)
  effective_batch_differs,          // the config resolves to another train_batch_size than intended
  loss_not_scaled,                  // gradient = golden × GAS
  loss_scaled_twice,                // gradient = golden / GAS
  zeroed_inside_window,             // gradient = last micro-batch only
  never_zeroed,                     // gradients accumulate across optimizer steps
  optimizer_every_micro_step,       // accumulation bypassed
  step_once_per_window,             // boundary only every GAS step() calls
  unmanaged_gradient_accumulation,  // managed_gradient_accumulation false: every step() steps
  // The loop's gradient sync switch (loop.gradient_sync):
  gradients_not_reduced,  // DeepSpeed: the boundary's backward inside no_sync(), no all-reduce
  gradient_sync_off_at_boundary,  // FSDP2: sync on for the window's first backward, not its last
  gradients_never_synchronised,   // FSDP2: sync off for every backward, the optimizer gets none
  // Hugging Face Trainer under accelerate < 1.8.0 with a config whose GAS is 1: DeepSpeed steps
  // every micro-batch on 1/GAS of its gradient (the Trainer's division, never undone)
  trainer_boundary_ignored,
  per_micro_batch_token_normalisation,
  // The token loss divided by every label, each row's first included, which a causal LM never
  // predicts (judged by `watch` from the labels its forward received)
  labels_counted_but_not_predicted,
  // A window the loop closed before gradient_accumulation_steps micro-batches (accelerate's
  // accumulate() at the end of the data loader), each still divided by GAS (judged by `watch`)
  window_closed_early,
  // engine.backward(loss, scale_wrt_gas=False) divided by GAS all the same: DeepSpeed 0.19.8 at
  // ZeRO 0 when the loss is the tensor the engine's forward returned (judged by `watch`)
  scale_wrt_gas_ignored,
  // Each rank divides its window's token loss by its own tokens and DeepSpeed averages the ranks
  // (transformers' average_tokens_across_devices=False; judged by `watch`)
  per_rank_token_normalisation,
  reentrant_checkpoint_without_input_grad,  // a checkpointed block fed no input with history
  backward_in_evaluation,  // evaluation's gradients land in the next training step
  training_diverged,       // the run's loss, gradients or parameters became NaN or Inf
  lr_scheduler_stepped_every_micro_step,  // the loop steps the config's scheduler too
  scheduler_start_rate_first_group_only,  // WarmupCosineLR < 0.19.0 starts only group 0 at 0
  lamb_trust_ratio_over_partition,  // ZeRO 1-2 hand FusedLamb one flat partition per rank
  // Mixed precision, judged from the engine's step records and the precision twin:
  overflow_skipped_steps,      // gradients overflowed and DeepSpeed skipped optimizer steps
  loss_scale_at_minimum,       // DynamicLossScaler raised: the run ended at the minimum scale
  low_precision_accumulation,  // correct semantics, but fp16/bf16 accumulation drifts beyond
                               // the precision twin's noise
  clipped_before_unscaling,    // the loop clipped fp16 gradients still multiplied by the scale
  optimizer_stepped_at_initialization,  // FP16_Optimizer's zero-gradient step when it is built
  unscaled_by_grown_scale,  // a step where the fp16 scale grew divided its gradients by the new one
  // Memory, judged from the probes:
  tensor_memory_leak,  // live tensor bytes grow every step
  host_memory_leak,    // the host heap grows every step while tensors stay flat
  memory_over_budget,  // peak tensor bytes above the scenario's budget
  // ZeRO, judged from the engine's measured model states and traffic:
  gathered_parameters_kept,       // stage 3: the loop keeps full parameters alive between steps
  model_states_differ_from_zero,  // held bytes not within 5% of the ZeRO paper's formula
  traffic_differs_from_zero,      // bytes sent per step not within 5% of the paper's formula
};

struct Expectation {
  ExpectedOutcome outcome = ExpectedOutcome::pass;
  std::optional<ConfigErrorKind> config_error;  // when outcome == config_error
  std::optional<DiagnosisKind> diagnosis;       // when outcome == diagnosis
};

const EnumSpellings<ExpectedOutcome>& expected_outcome_spellings();  // "expect"'s three
const EnumSpellings<ExpectedOutcome>& reproduced_as_spellings();     // "failed", "diagnosis"
const EnumSpellings<DiagnosisKind>& diagnosis_spellings();

// Reads "expect": {"outcome": "pass"} | {"outcome": "config_error", "error": NAME}
//                | {"outcome": "diagnosis", "diagnosis": NAME}.
Expectation read_expectation(ObjectReader& expect);

// Reads "reproduced_as": {"outcome": "failed"} | {"outcome": "diagnosis", "diagnosis": NAME}.
Expectation read_reproduced_as(ObjectReader& reproduced_as);

}  // namespace trainrepro
