// The collectives the ZeRO stages use, written so that one rank (no communicator) needs no
// special case: with a single rank every collective is the identity.
#pragma once
#include <ATen/Tensor.h>

#include "harness/distributed/communicator.h"

namespace trainrepro {

int64_t world_size_of(const Communicator* communicator);
int64_t rank_of(const Communicator* communicator);

// In place: the mean of every rank's `tensor`.
void average_across_ranks(Communicator* communicator, at::Tensor& tensor);
double sum_across_ranks(Communicator* communicator, double value, at::Device device);
// `flat` holds world_size equal chunks; returns the mean of every rank's chunk `rank` (with one
// rank, `flat` itself: read it, do not keep it).
at::Tensor reduce_scatter_average(Communicator* communicator, const at::Tensor& flat);
// Every rank's `shard`, concatenated in rank order, in a fresh tensor.
at::Tensor all_gather(Communicator* communicator, const at::Tensor& shard);

}  // namespace trainrepro
