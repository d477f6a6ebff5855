#include "harness/engine/zero_layout.h"

#include <ATen/ATen.h>

namespace trainrepro {

int64_t padded_to_world(int64_t numel, int64_t world_size) {
  return (numel + world_size - 1) / world_size * world_size;
}

std::vector<std::vector<size_t>> positions_by_group(const std::vector<int64_t>& group_of,
                                                    size_t count) {
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < count; ++i) {
    const auto group = static_cast<size_t>(group_of.empty() ? 0 : group_of.at(i));
    if (groups.size() <= group) groups.resize(group + 1);
    groups[group].push_back(i);
  }
  // An empty group holds nothing to partition or update (a model without biases).
  std::vector<std::vector<size_t>> non_empty;
  for (std::vector<size_t>& positions : groups) {
    if (!positions.empty()) non_empty.push_back(std::move(positions));
  }
  return non_empty;
}

FlatLayout flat_layout(const std::vector<at::Tensor>& parameters, int64_t world_size) {
  FlatLayout layout;
  layout.world_size = world_size;
  for (const at::Tensor& parameter : parameters) {
    layout.offsets.push_back(layout.numel);
    layout.numels.push_back(parameter.numel());
    layout.numel += parameter.numel();
  }
  layout.padded_numel = padded_to_world(layout.numel, world_size);
  layout.shard_numel = layout.padded_numel / world_size;
  return layout;
}

at::Tensor flatten_padded(const std::vector<at::Tensor>& tensors, const FlatLayout& layout,
                          const at::TensorOptions& options) {
  at::Tensor flat = at::zeros({layout.padded_numel}, options);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined()) continue;
    flat.narrow(0, layout.offsets[i], layout.numels[i]).copy_(tensors[i].reshape({-1}));
  }
  return flat;
}

}  // namespace trainrepro
