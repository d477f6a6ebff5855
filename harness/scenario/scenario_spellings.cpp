// How the scenario format spells its enums; the loader refuses anything else, naming these.
#include "harness/scenario/scenario.h"

namespace trainrepro {

const EnumSpellings<DeviceChoice>& device_choice_spellings() {
  static const EnumSpellings<DeviceChoice> spellings = {{DeviceChoice::cpu, "cpu"},
                                                        {DeviceChoice::cuda, "cuda"},
                                                        {DeviceChoice::auto_detect, "auto"}};
  return spellings;
}

const EnumSpellings<Requirement>& requirement_spellings() {
  static const EnumSpellings<Requirement> spellings = {{Requirement::cuda, "cuda"},
                                                       {Requirement::mpi, "mpi"}};
  return spellings;
}

const EnumSpellings<EngineDtype>& engine_dtype_spellings() {
  static const EnumSpellings<EngineDtype> spellings = {{EngineDtype::float32, "float32"},
                                                       {EngineDtype::float64, "float64"}};
  return spellings;
}

const EnumSpellings<ZeroGradHabit>& zero_grad_spellings() {
  static const EnumSpellings<ZeroGradHabit> spellings = {
      {ZeroGradHabit::at_boundary, "boundary"},
      {ZeroGradHabit::every_micro_step, "every_micro_step"},
      {ZeroGradHabit::never, "never"}};
  return spellings;
}

const EnumSpellings<ForwardHabit>& forward_spellings() {
  static const EnumSpellings<ForwardHabit> spellings = {{ForwardHabit::engine, "engine"},
                                                        {ForwardHabit::module, "module"}};
  return spellings;
}

const EnumSpellings<LossScalingHabit>& loss_scaling_spellings() {
  static const EnumSpellings<LossScalingHabit> spellings = {{LossScalingHabit::engine, "engine"},
                                                            {LossScalingHabit::none, "none"},
                                                            {LossScalingHabit::twice, "twice"}};
  return spellings;
}

const EnumSpellings<SteppingHabit>& stepping_spellings() {
  static const EnumSpellings<SteppingHabit> spellings = {
      {SteppingHabit::every_micro_step, "every_micro_step"},
      {SteppingHabit::once_per_window, "once_per_window"},
      {SteppingHabit::optimizer_every_micro_step, "optimizer_every_micro_step"}};
  return spellings;
}

const EnumSpellings<GradientSync>& gradient_sync_spellings() {
  static const EnumSpellings<GradientSync> spellings = {
      {GradientSync::engine, "engine"},
      {GradientSync::every_micro_step, "every_micro_step"},
      {GradientSync::first_micro_step, "first_micro_step"},
      {GradientSync::never, "never"}};
  return spellings;
}

const EnumSpellings<TokenNormalisation>& token_normalisation_spellings() {
  static const EnumSpellings<TokenNormalisation> spellings = {
      {TokenNormalisation::whole_batch, "whole_batch"},
      {TokenNormalisation::per_micro_batch, "per_micro_batch"}};
  return spellings;
}

const EnumSpellings<ActivationCheckpointing>& activation_checkpointing_spellings() {
  static const EnumSpellings<ActivationCheckpointing> spellings = {
      {ActivationCheckpointing::none, "none"},
      {ActivationCheckpointing::reentrant, "reentrant"},
      {ActivationCheckpointing::non_reentrant, "non_reentrant"}};
  return spellings;
}

const EnumSpellings<LrSchedulerStepping>& lr_scheduler_stepping_spellings() {
  static const EnumSpellings<LrSchedulerStepping> spellings = {
      {LrSchedulerStepping::engine, "engine"},
      {LrSchedulerStepping::every_micro_step, "every_micro_step"}};
  return spellings;
}

const EnumSpellings<KeepHabit>& keep_spellings() {
  static const EnumSpellings<KeepHabit> spellings = {
      {KeepHabit::nothing, "nothing"},
      {KeepHabit::loss_item, "loss_item"},
      {KeepHabit::loss_with_graph, "loss_with_graph"},
      {KeepHabit::loss_detached, "loss_detached"},
      {KeepHabit::loss_on_cpu, "loss_on_cpu"},
      {KeepHabit::outputs_with_graph, "outputs_with_graph"},
      {KeepHabit::outputs_detached, "outputs_detached"},
      {KeepHabit::outputs_on_cpu, "outputs_on_cpu"},
      {KeepHabit::gathered_parameters, "gathered_parameters"},
      {KeepHabit::gathered_parameter_norms, "gathered_parameter_norms"}};
  return spellings;
}

}  // namespace trainrepro
