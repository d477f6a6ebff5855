#include "harness/engine/rank_collectives.h"

#include <ATen/ATen.h>

namespace trainrepro {

int64_t world_size_of(const Communicator* communicator) {
  return communicator ? communicator->world_size() : 1;
}

int64_t rank_of(const Communicator* communicator) {
  return communicator ? communicator->rank() : 0;
}

void average_across_ranks(Communicator* communicator, at::Tensor& tensor) {
  if (world_size_of(communicator) == 1) return;
  communicator->all_reduce_sum(tensor);
  tensor.div_(static_cast<double>(communicator->world_size()));
}

double sum_across_ranks(Communicator* communicator, double value, at::Device device) {
  if (world_size_of(communicator) == 1) return value;
  at::Tensor scalar = at::full({1}, value, at::TensorOptions().dtype(at::kDouble).device(device));
  communicator->all_reduce_sum(scalar);
  return scalar.item<double>();
}

at::Tensor reduce_scatter_average(Communicator* communicator, const at::Tensor& flat) {
  const int64_t ranks = world_size_of(communicator);
  if (ranks == 1) return flat;
  at::Tensor shard = at::empty({flat.numel() / ranks}, flat.options());
  communicator->reduce_scatter_sum(flat.contiguous(), shard);
  return shard.div_(static_cast<double>(ranks));
}

at::Tensor all_gather(Communicator* communicator, const at::Tensor& shard) {
  const int64_t ranks = world_size_of(communicator);
  if (ranks == 1) return shard.clone();
  at::Tensor full = at::empty({shard.numel() * ranks}, shard.options());
  communicator->all_gather(shard.contiguous(), full);
  return full;
}

}  // namespace trainrepro
