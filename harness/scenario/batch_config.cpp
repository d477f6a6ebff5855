#include "harness/scenario/batch_config.h"

#include <string>

namespace trainrepro {
namespace {

// Python's `//` rounds toward negative infinity; C++'s `/` toward zero. They differ for
// negative operands, which reach this code when a user writes a negative size, and the
// number DeepSpeed prints in its message is the Python one.
int64_t floor_divide(int64_t numerator, int64_t denominator) {
  int64_t quotient = numerator / denominator;
  if ((numerator % denominator != 0) && ((numerator < 0) != (denominator < 0))) --quotient;
  return quotient;
}

// DeepSpeed divides by the given micro batch or GAS before asserting anything, so a zero there
// ends in Python's ZeroDivisionError rather than one of its assertions; we say exactly that.
ConfigError division_by_zero(ConfigErrorKind kind, const char* divisor_key) {
  return {kind, std::string("ZeroDivisionError: integer division or modulo by zero "
                            "(DeepSpeed divides by ") +
                    divisor_key + " = 0)"};
}

// `_batch_assertion`, in its order.
std::optional<ConfigError> check_batch(int64_t train_batch, int64_t micro_batch, int64_t grad_acc,
                                       int64_t world_size) {
  if (!(train_batch > 0)) {
    return ConfigError{
        ConfigErrorKind::train_batch_size_not_positive,
        "Train batch size: " + std::to_string(train_batch) + " has to be greater than 0"};
  }
  if (!(micro_batch > 0)) {
    return ConfigError{
        ConfigErrorKind::micro_batch_not_positive,
        "Micro batch size per gpu: " + std::to_string(micro_batch) + " has to be greater than 0"};
  }
  if (!(grad_acc > 0)) {
    return ConfigError{
        ConfigErrorKind::gradient_accumulation_steps_not_positive,
        "Gradient accumulation steps: " + std::to_string(grad_acc) + " has to be greater than 0"};
  }
  if (train_batch != micro_batch * grad_acc * world_size) {
    return ConfigError{ConfigErrorKind::batch_size_mismatch,
                       "Check batch related parameters. train_batch_size is not equal to "
                       "micro_batch_per_gpu * gradient_acc_step * world_size " +
                           std::to_string(train_batch) + " != " + std::to_string(micro_batch) +
                           " * " + std::to_string(grad_acc) + " * " + std::to_string(world_size)};
  }
  return std::nullopt;
}

}  // namespace

BatchResolution resolve_batch_config(const BatchInputs& inputs, int64_t world_size) {
  const auto& tb = inputs.train_batch_size;
  const auto& mb = inputs.micro_batch_per_gpu;
  const auto& gas = inputs.gradient_accumulation_steps;

  ResolvedBatch batch;
  batch.world_size = world_size;
  batch.given = inputs;

  if (tb && mb && gas) {
    // All three given: nothing is computed, the assertion alone decides.
    batch.train_batch_size = *tb;
    batch.micro_batch_per_gpu = *mb;
    batch.gradient_accumulation_steps = *gas;
  } else if (tb && mb) {
    if (*mb == 0) {
      return division_by_zero(ConfigErrorKind::micro_batch_not_positive,
                              "train_micro_batch_size_per_gpu");
    }
    batch.train_batch_size = *tb;
    batch.micro_batch_per_gpu = *mb;
    batch.gradient_accumulation_steps = floor_divide(floor_divide(*tb, *mb), world_size);
  } else if (tb && gas) {
    if (*gas == 0) {
      return division_by_zero(ConfigErrorKind::gradient_accumulation_steps_not_positive,
                              "gradient_accumulation_steps");
    }
    batch.train_batch_size = *tb;
    batch.gradient_accumulation_steps = *gas;
    batch.micro_batch_per_gpu = floor_divide(floor_divide(*tb, world_size), *gas);
  } else if (mb && gas) {
    batch.micro_batch_per_gpu = *mb;
    batch.gradient_accumulation_steps = *gas;
    batch.train_batch_size = *mb * *gas * world_size;
  } else if (tb) {
    batch.train_batch_size = *tb;
    batch.gradient_accumulation_steps = 1;
    batch.micro_batch_per_gpu = floor_divide(*tb, world_size);
  } else if (mb) {
    batch.micro_batch_per_gpu = *mb;
    batch.train_batch_size = *mb * world_size;
    batch.gradient_accumulation_steps = 1;
  } else {
    return ConfigError{ConfigErrorKind::batch_size_missing,
                       "Either train_batch_size or train_micro_batch_size_per_gpu needs to be "
                       "provided"};
  }

  if (auto error = check_batch(batch.train_batch_size, batch.micro_batch_per_gpu,
                               batch.gradient_accumulation_steps, world_size)) {
    return *error;
  }
  return batch;
}

}  // namespace trainrepro
