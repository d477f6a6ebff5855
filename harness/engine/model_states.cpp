#include "harness/engine/model_states.h"

#include <set>

namespace trainrepro {

int64_t storage_bytes(const std::vector<at::Tensor>& tensors) {
  std::set<const void*> seen;
  int64_t bytes = 0;
  for (const at::Tensor& tensor : tensors) {
    if (!tensor.defined() || !tensor.has_storage()) continue;
    const c10::Storage& storage = tensor.storage();
    if (storage.nbytes() == 0 || !seen.insert(storage.data()).second) continue;
    bytes += static_cast<int64_t>(storage.nbytes());
  }
  return bytes;
}

int64_t padded_numel_from_shapes(int64_t zero_stage, int64_t world_size,
                                 const std::vector<int64_t>& parameter_numels) {
  const auto round_up = [world_size](int64_t numel) {
    return (numel + world_size - 1) / world_size * world_size;
  };
  int64_t total = 0;
  for (int64_t numel : parameter_numels) total += zero_stage >= 3 ? round_up(numel) : numel;
  return zero_stage == 1 || zero_stage == 2 ? round_up(total) : total;
}

ModelStateBytes expected_model_states(int64_t zero_stage, int64_t world_size, int64_t numel,
                                      const BytesPerParameter& bytes) {
  const auto whole = [&](int64_t per_element) { return per_element * numel; };
  const auto shard = [&](int64_t per_element) { return per_element * numel / world_size; };
  ModelStateBytes expected;
  expected.parameters = zero_stage >= 3 ? shard(bytes.parameters) : whole(bytes.parameters);
  expected.gradients = zero_stage >= 2 ? shard(bytes.gradients) : whole(bytes.gradients);
  expected.optimizer_states =
      zero_stage >= 1 ? shard(bytes.optimizer_states) : whole(bytes.optimizer_states);
  return expected;
}

int64_t expected_ring_bytes_per_step(int64_t zero_stage, int64_t world_size, int64_t gas,
                                     int64_t parameter_bytes, int64_t recomputed_bytes,
                                     FrozenParameterBytes frozen, int64_t scalar_reductions,
                                     PersistentParameterBytes persistent) {
  constexpr int64_t kScalarAllReduceBytes = 2 * 8;  // a double, reduced and broadcast
  int64_t bytes = scalar_reductions * kScalarAllReduceBytes;
  if (zero_stage >= 3) {
    // Every micro-step reduce-scatters every gradient and gathers the partitioned parameters for
    // its forward and again for its backward; the persistent ones are gathered once per step.
    bytes += gas * parameter_bytes + 2 * gas * (parameter_bytes - persistent.trainable) +
             gas * (recomputed_bytes + frozen.forward + frozen.backward) + persistent.trainable +
             persistent.frozen + persistent.regathered_after_the_loop;
  } else {
    // Stages 0 and 1: one reduction and one gather of the model per step; stage 2 reduces
    // every micro-step.
    bytes += (zero_stage == 2 ? gas + 1 : 2) * parameter_bytes;
  }
  return bytes * (world_size - 1) / world_size;
}

bool persistent_at_stage_3(int64_t numel, int64_t param_persistence_threshold) {
  return numel <= param_persistence_threshold;
}

}  // namespace trainrepro
