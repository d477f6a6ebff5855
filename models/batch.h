// A batch of samples as tensors, produced by a data generator and consumed by a model.
#pragma once
#include <cstdint>

#include <ATen/Tensor.h>

namespace trainrepro {

struct Batch {
  // classification: inputs (N, F) float, targets (N) int64 class ids
  // regression:     inputs (N, F) float, targets (N, O) float
  // token_sequences: inputs (N, T) int64 token ids (0 = padding), targets (N, T) int64 next
  //                  tokens, mask (N, T) bool: true where the target counts in the loss
  at::Tensor inputs;
  at::Tensor targets;
  at::Tensor mask;  // undefined for feature data
  int64_t samples = 0;
  // Loss items: samples for feature data, unmasked target tokens for token data. A mean loss is
  // (sum of per-item losses) / items.
  int64_t items = 0;
};

}  // namespace trainrepro
