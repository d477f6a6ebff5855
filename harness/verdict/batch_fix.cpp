#include "harness/verdict/batch_fix.h"

#include <cstdlib>
#include <vector>

namespace trainrepro {
namespace {

bool resolves_to(const BatchInputs& inputs, int64_t world_size, int64_t intended) {
  const BatchResolution resolution = resolve_batch_config(inputs, world_size);
  const auto* batch = std::get_if<ResolvedBatch>(&resolution);
  return batch && batch->train_batch_size == intended;
}

std::string setting(const char* key, int64_t value) {
  return "\"" + std::string(key) + "\": " + std::to_string(value);
}

}  // namespace

std::string suggest_batch_fix(const ResolvedBatch& batch, int64_t intended) {
  const int64_t world = batch.world_size;
  const int64_t per_step = batch.micro_batch_per_gpu * world;  // samples per micro-step
  std::vector<std::string> fixes;

  // Keep the micro batch, set the accumulation steps (and the train batch, when the config
  // gives it, since all three must then agree).
  if (per_step > 0 && intended % per_step == 0) {
    BatchInputs inputs = batch.given;
    inputs.gradient_accumulation_steps = intended / per_step;
    if (inputs.train_batch_size) inputs.train_batch_size = intended;
    if (!inputs.micro_batch_per_gpu) inputs.micro_batch_per_gpu = batch.micro_batch_per_gpu;
    if (resolves_to(inputs, world, intended)) {
      std::string fix = setting("gradient_accumulation_steps", intended / per_step);
      if (batch.given.train_batch_size) fix += " with " + setting("train_batch_size", intended);
      fixes.push_back(fix);
    }
  }
  // Or state the train batch and let DeepSpeed compute the accumulation steps.
  BatchInputs by_train_batch = batch.given;
  by_train_batch.train_batch_size = intended;
  by_train_batch.gradient_accumulation_steps.reset();
  if (!by_train_batch.micro_batch_per_gpu)
    by_train_batch.micro_batch_per_gpu = batch.micro_batch_per_gpu;
  if (resolves_to(by_train_batch, world, intended)) {
    fixes.push_back(
        setting("train_batch_size", intended) +
        (batch.given.gradient_accumulation_steps ? " without gradient_accumulation_steps" : ""));
  }
  if (!fixes.empty()) {
    std::string text = "Fix: set " + fixes[0];
    for (size_t i = 1; i < fixes.size(); ++i) text += " or " + fixes[i];
    return text + " in the DeepSpeed config";
  }

  // The intended batch is not a multiple of micro batch x world size: the nearest that is.
  const int64_t below = per_step > 0 ? intended / per_step : 0;
  const int64_t gas =
      below == 0 || (intended - below * per_step) * 2 > per_step ? below + 1 : below;
  return "No setting of gradient_accumulation_steps reaches " + std::to_string(intended) + " on " +
         std::to_string(world) +
         " rank(s): it is not a multiple of "
         "train_micro_batch_size_per_gpu x world_size = " +
         std::to_string(per_step) + ". Nearest: " + setting("gradient_accumulation_steps", gas) +
         " (train_batch_size " + std::to_string(gas * per_step) +
         "), or change the micro batch so that it divides " + std::to_string(intended) + " / " +
         std::to_string(world);
}

}  // namespace trainrepro
