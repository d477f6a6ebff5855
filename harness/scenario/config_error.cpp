#include "harness/scenario/config_error.h"

namespace trainrepro {

const EnumSpellings<ConfigErrorKind>& config_error_spellings() {
  static const EnumSpellings<ConfigErrorKind> spellings = {
      {ConfigErrorKind::batch_size_missing, "batch_size_missing"},
      {ConfigErrorKind::train_batch_size_not_positive, "train_batch_size_not_positive"},
      {ConfigErrorKind::micro_batch_not_positive, "micro_batch_not_positive"},
      {ConfigErrorKind::gradient_accumulation_steps_not_positive,
       "gradient_accumulation_steps_not_positive"},
      {ConfigErrorKind::batch_size_mismatch, "batch_size_mismatch"},
      {ConfigErrorKind::fp16_and_bf16_both_enabled, "fp16_and_bf16_both_enabled"},
      {ConfigErrorKind::zero_stage_unsupported, "zero_stage_unsupported"},
      {ConfigErrorKind::unknown_section_key, "unknown_section_key"},
      {ConfigErrorKind::removed_key, "removed_key"},
      {ConfigErrorKind::optimizer_not_supported, "optimizer_not_supported"},
      {ConfigErrorKind::optimizer_invalid, "optimizer_invalid"},
      {ConfigErrorKind::untested_zero_optimizer, "untested_zero_optimizer"},
      {ConfigErrorKind::client_optimizer_with_offload, "client_optimizer_with_offload"},
      {ConfigErrorKind::direct_backward_unsupported, "direct_backward_unsupported"},
      {ConfigErrorKind::no_sync_with_partitioned_gradients, "no_sync_with_partitioned_gradients"},
      {ConfigErrorKind::no_sync_boundary_at_zero_stage_1, "no_sync_boundary_at_zero_stage_1"},
      {ConfigErrorKind::boundary_with_unmanaged_accumulation,
       "boundary_with_unmanaged_accumulation"},
      {ConfigErrorKind::scheduler_invalid, "scheduler_invalid"},
      {ConfigErrorKind::precision_invalid, "precision_invalid"},
      {ConfigErrorKind::unsupported_precision_mix, "unsupported_precision_mix"},
      {ConfigErrorKind::batch_too_large, "batch_too_large"},
  };
  return spellings;
}

}  // namespace trainrepro
