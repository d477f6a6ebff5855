// How ZeRO lays parameters out across ranks. Stages 1 and 2 flatten every parameter into one
// buffer padded to a multiple of the world size, so each rank owns one equal, contiguous shard
// (DeepSpeed pads each parameter group the same way). Stage 3 partitions each parameter on its
// own, padded to the world size, as DeepSpeed's per-parameter ds_tensor does.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/Tensor.h>

namespace trainrepro {

// The smallest multiple of `world_size` that holds `numel` elements.
int64_t padded_to_world(int64_t numel, int64_t world_size);

struct FlatLayout {
  std::vector<int64_t> offsets;  // where each parameter starts in the flat buffer
  std::vector<int64_t> numels;
  int64_t numel = 0;         // Ψ: every parameter, unpadded
  int64_t padded_numel = 0;  // Ψ rounded up to a multiple of the world size
  int64_t shard_numel = 0;   // padded_numel / world_size
  int64_t world_size = 1;

  int64_t shard_offset(int64_t rank) const { return rank * shard_numel; }
};

FlatLayout flat_layout(const std::vector<at::Tensor>& parameters, int64_t world_size);

// The positions of `count` parameters per optimizer param group (`group_of`: each one's group;
// empty: one group), non-empty groups only, in group order: how ZeRO 1-3 hand the optimizer one
// flat tensor per group, and how they pad (1-2).
std::vector<std::vector<size_t>> positions_by_group(const std::vector<int64_t>& group_of,
                                                    size_t count);

// One flat, zero-padded copy of `tensors` laid out as `layout` says (gradients or parameters;
// an undefined tensor contributes zeros).
at::Tensor flatten_padded(const std::vector<at::Tensor>& tensors, const FlatLayout& layout,
                          const at::TensorOptions& options);

}  // namespace trainrepro
