#include "harness/scenario/expectation.h"

namespace trainrepro {

const EnumSpellings<ExpectedOutcome>& expected_outcome_spellings() {
  static const EnumSpellings<ExpectedOutcome> spellings = {
      {ExpectedOutcome::pass, "pass"},
      {ExpectedOutcome::config_error, "config_error"},
      {ExpectedOutcome::diagnosis, "diagnosis"},
  };
  return spellings;
}

const EnumSpellings<ExpectedOutcome>& reproduced_as_spellings() {
  static const EnumSpellings<ExpectedOutcome> spellings = {
      {ExpectedOutcome::failure, "failed"},
      {ExpectedOutcome::diagnosis, "diagnosis"},
  };
  return spellings;
}

const EnumSpellings<DiagnosisKind>& diagnosis_spellings() {
  static const EnumSpellings<DiagnosisKind> spellings = {
      {DiagnosisKind::no_accumulation, "no_accumulation"},
      {DiagnosisKind::trainer_boundary_ignored, "trainer_boundary_ignored"},
      {DiagnosisKind::effective_batch_differs, "effective_batch_differs"},
      {DiagnosisKind::loss_not_scaled, "loss_not_scaled"},
      {DiagnosisKind::loss_scaled_twice, "loss_scaled_twice"},
      {DiagnosisKind::zeroed_inside_window, "zeroed_inside_window"},
      {DiagnosisKind::never_zeroed, "never_zeroed"},
      {DiagnosisKind::optimizer_every_micro_step, "optimizer_every_micro_step"},
      {DiagnosisKind::step_once_per_window, "step_once_per_window"},
      {DiagnosisKind::gradients_not_reduced, "gradients_not_reduced"},
      {DiagnosisKind::gradient_sync_off_at_boundary, "gradient_sync_off_at_boundary"},
      {DiagnosisKind::gradients_never_synchronised, "gradients_never_synchronised"},
      {DiagnosisKind::unmanaged_gradient_accumulation, "unmanaged_gradient_accumulation"},
      {DiagnosisKind::per_micro_batch_token_normalisation, "per_micro_batch_token_normalisation"},
      {DiagnosisKind::reentrant_checkpoint_without_input_grad,
       "reentrant_checkpoint_without_input_grad"},
      {DiagnosisKind::backward_in_evaluation, "backward_in_evaluation"},
      {DiagnosisKind::training_diverged, "training_diverged"},
      {DiagnosisKind::lr_scheduler_stepped_every_micro_step, "lr_scheduler_stepped_every_micro_step"},
      {DiagnosisKind::scheduler_start_rate_first_group_only,
       "scheduler_start_rate_first_group_only"},
      {DiagnosisKind::lamb_trust_ratio_over_partition, "lamb_trust_ratio_over_partition"},
      {DiagnosisKind::overflow_skipped_steps, "overflow_skipped_steps"},
      {DiagnosisKind::loss_scale_at_minimum, "loss_scale_at_minimum"},
      {DiagnosisKind::low_precision_accumulation, "low_precision_accumulation"},
      {DiagnosisKind::clipped_before_unscaling, "clipped_before_unscaling"},
      {DiagnosisKind::optimizer_stepped_at_initialization, "optimizer_stepped_at_initialization"},
      {DiagnosisKind::unscaled_by_grown_scale, "unscaled_by_grown_scale"},
      {DiagnosisKind::labels_counted_but_not_predicted, "labels_counted_but_not_predicted"},
      {DiagnosisKind::window_closed_early, "window_closed_early"},
      {DiagnosisKind::scale_wrt_gas_ignored, "scale_wrt_gas_ignored"},
      {DiagnosisKind::per_rank_token_normalisation, "per_rank_token_normalisation"},
      {DiagnosisKind::tensor_memory_leak, "tensor_memory_leak"},
      {DiagnosisKind::host_memory_leak, "host_memory_leak"},
      {DiagnosisKind::memory_over_budget, "memory_over_budget"},
      {DiagnosisKind::gathered_parameters_kept, "gathered_parameters_kept"},
      {DiagnosisKind::model_states_differ_from_zero, "model_states_differ_from_zero"},
      {DiagnosisKind::traffic_differs_from_zero, "traffic_differs_from_zero"},
  };
  return spellings;
}

Expectation read_expectation(ObjectReader& expect) {
  Expectation expectation;
  expectation.outcome = expect.required_enum("outcome", expected_outcome_spellings());
  switch (expectation.outcome) {
    case ExpectedOutcome::pass:
      break;
    case ExpectedOutcome::config_error:
      expectation.config_error = expect.required_enum("error", config_error_spellings());
      break;
    case ExpectedOutcome::diagnosis:
      expectation.diagnosis = expect.required_enum("diagnosis", diagnosis_spellings());
      break;
    case ExpectedOutcome::failure:  // not among expected_outcome_spellings()
      break;
  }
  expect.reject_unknown_keys();
  return expectation;
}

Expectation read_reproduced_as(ObjectReader& reproduced_as) {
  Expectation expectation;
  expectation.outcome = reproduced_as.required_enum("outcome", reproduced_as_spellings());
  if (expectation.outcome == ExpectedOutcome::diagnosis) {
    expectation.diagnosis = reproduced_as.required_enum("diagnosis", diagnosis_spellings());
  }
  reproduced_as.reject_unknown_keys();
  return expectation;
}

}  // namespace trainrepro
