// The models of the zoo as LibTorch modules with one interface: the summed loss over a batch's
// items (samples or tokens), so callers choose the normalisation (per micro-batch or per window).
// Parameters are initialised deterministically from the model seed in float64 and then cast, so
// a float32 run and its float64 golden start from the same weights.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "harness/scenario/scenario.h"
#include "models/batch.h"

namespace trainrepro {

class ZooModel : public torch::nn::Module {
 public:
  // The model's outputs for a batch (logits or predictions), with autograd history. Kept apart
  // from the loss because keeping outputs across steps is one of the habits that leak memory.
  virtual at::Tensor outputs(const Batch& batch) = 0;

  // Sum of per-item losses over the batch (a 0-dim tensor with autograd history):
  // classification: cross entropy per sample; regression: mean squared error over outputs per
  // sample; token_sequences: cross entropy per unmasked target token.
  virtual at::Tensor loss_sum_of(const at::Tensor& outputs, const Batch& batch) = 0;

  at::Tensor loss_sum(const Batch& batch) { return loss_sum_of(outputs(batch), batch); }
};

// Builds the model named by `spec` (see models/README.md) with its parameters in `dtype` on
// `device`. Parameter names (named_parameters()) are stable: they key the golden files.
std::shared_ptr<ZooModel> build_model(const ModelSpec& spec, at::ScalarType dtype,
                                      at::Device device);

}  // namespace trainrepro
