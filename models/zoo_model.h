// The models of the zoo as LibTorch modules with one interface: the summed loss over a batch's
// items (samples or tokens), so callers choose the normalisation (per micro-batch or per window).
// Parameters are initialised deterministically from the model seed in float64 and then cast, so
// a float32 run and its float64 golden start from the same weights.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "models/batch.h"
#include "models/zoo_choice.h"

namespace trainrepro {

// Where a ZeRO stage 3 engine hooks in: every model runs each of its units (a layer, a block)
// through run_unit(), so parameters can be gathered before the unit's forward and released after
// it, as DeepSpeed's module hooks do. Without a gate, run_unit() just runs the forward.
class ParameterGate {
 public:
  virtual ~ParameterGate() = default;
  virtual void before_forward(torch::nn::Module& unit) = 0;
  // `output` is the unit's result; a gate may hook its gradient to gather again for backward.
  virtual void after_forward(torch::nn::Module& unit, const at::Tensor& output) = 0;
};

class ZooModel : public torch::nn::Module {
 public:
  // The gate outlives the model's use of it; null removes it.
  void set_parameter_gate(ParameterGate* gate) { gate_ = gate; }
  // Whether parameters are released between units: layers must then not let autograd keep
  // views of their weights (see linear_saving_weight.h).
  bool parameters_partitioned() const { return gate_ != nullptr; }

  // The model's outputs for a batch (logits or predictions), with autograd history. Kept apart
  // from the loss because keeping outputs across steps is one of the habits that leak memory.
  virtual at::Tensor outputs(const Batch& batch) = 0;

  // Sum of per-item losses over the batch (a 0-dim tensor with autograd history):
  // classification: cross entropy per sample; regression: mean squared error over outputs per
  // sample; token_sequences: cross entropy per unmasked target token.
  virtual at::Tensor loss_sum_of(const at::Tensor& outputs, const Batch& batch) = 0;

  at::Tensor loss_sum(const Batch& batch) { return loss_sum_of(outputs(batch), batch); }

 protected:
  template <typename Forward>
  at::Tensor run_unit(torch::nn::Module& unit, Forward&& forward) {
    if (gate_ == nullptr) return forward();
    gate_->before_forward(unit);
    at::Tensor output = forward();
    gate_->after_forward(unit, output);
    return output;
  }

 private:
  ParameterGate* gate_ = nullptr;
};

// Builds the model named by `spec` (see models/README.md) with its parameters in `dtype` on
// `device`. Parameter names (named_parameters()) are stable: they key the golden files.
std::shared_ptr<ZooModel> build_model(const ModelSpec& spec, at::ScalarType dtype,
                                      at::Device device);

}  // namespace trainrepro
