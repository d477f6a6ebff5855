#include "harness/engine/zero_layout.h"

#include <ATen/ATen.h>

namespace trainrepro {

int64_t padded_to_world(int64_t numel, int64_t world_size) {
  return (numel + world_size - 1) / world_size * world_size;
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
