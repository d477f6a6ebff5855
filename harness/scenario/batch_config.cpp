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

// Beyond this many samples per step a product is refused rather than wrapped in int64.
constexpr __int128 kLargestBatch = static_cast<__int128>(1) << 62;

std::string to_text(__int128 value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  std::string digits;
  for (__int128 rest = negative ? -value : value; rest > 0; rest /= 10) {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(rest % 10)));
  }
  return negative ? "-" + digits : digits;
}

ConfigError batch_too_large(const std::string& product, __int128 value) {
  return ConfigError{ConfigErrorKind::batch_too_large,
                     "the batch arithmetic gives " + product + " = " + to_text(value) +
                         " samples per optimizer step, beyond the 2^62 trainrepro can count "
                         "(DeepSpeed's Python integers would hold it; no machine trains it)"};
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
  // In 128 bits: the inputs are at most 2^40 each and the world size 2^20, so this never wraps.
  const __int128 product = static_cast<__int128>(micro_batch) * grad_acc * world_size;
  if (train_batch != product) {
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
    const __int128 product = static_cast<__int128>(*mb) * *gas * world_size;
    if (product > kLargestBatch) {
      return batch_too_large("train_micro_batch_size_per_gpu * gradient_accumulation_steps * "
                             "world_size " + std::to_string(*mb) + " * " + std::to_string(*gas) +
                                 " * " + std::to_string(world_size),
                             product);
    }
    batch.train_batch_size = static_cast<int64_t>(product);
  } else if (tb) {
    batch.train_batch_size = *tb;
    batch.gradient_accumulation_steps = 1;
    batch.micro_batch_per_gpu = floor_divide(*tb, world_size);
  } else if (mb) {
    batch.micro_batch_per_gpu = *mb;
    const __int128 product = static_cast<__int128>(*mb) * world_size;
    if (product > kLargestBatch) {
      return batch_too_large("train_micro_batch_size_per_gpu * world_size " + std::to_string(*mb) +
                                 " * " + std::to_string(world_size),
                             product);
    }
    batch.train_batch_size = static_cast<int64_t>(product);
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
