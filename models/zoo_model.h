// The models of the zoo as LibTorch modules with one interface: the summed loss over a batch's
// items (samples or tokens), so callers choose the normalisation (per micro-batch or per window).
// Parameters are initialised deterministically from the model seed in float64 and then cast, so
// a float32 run and its float64 golden start from the same weights.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "models/activation_checkpoint.h"
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
  // Whether the model's forward checkpoints its blocks (the user's model code, set by the loop
  // for the run under test; the golden is computed without).
  void set_activation_checkpointing(ActivationCheckpointing mode) { checkpointing_ = mode; }
  // The parameters that require grad, in named_parameters() order: what the user hands
  // deepspeed.initialize (filter(lambda p: p.requires_grad, ...), as the Hugging Face Trainer
  // does), what ZeRO flattens and the optimizer updates, and what the golden records.
  std::vector<std::pair<std::string, at::Tensor>> trainable_named_parameters() const;
  // Per trainable parameter: whether the Hugging Face Trainer's own AdamW leaves it out of
  // weight decay (transformers' get_decay_parameter_names: biases, and every parameter of a
  // LayerNorm module).
  std::vector<bool> parameters_without_decay() const;
  // The frozen ones (requires_grad false: scenario "model.frozen"), same order.
  std::vector<at::Tensor> frozen_parameters() const;
  // Per trainable parameter (trainable_named_parameters() order): whether a checkpointed block
  // holds it, so that its forward runs again in backward (ZeRO stage 3 gathers it once more).
  // Known after the first forward.
  std::vector<bool> recomputed_parameters();
  // Per frozen parameter (frozen_parameters() order): whether its unit's output carried autograd
  // history in the last forward, so that the unit's backward runs and ZeRO stage 3 gathers it
  // for that backward too (a frozen unit fed only by data or other frozen units is not).
  std::vector<bool> frozen_parameters_in_backward();

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
    if (output.requires_grad()) units_in_backward_.insert(&unit);
    gate_->after_forward(unit, output);
    return output;
  }

  // One block of the model (MLP: a layer with its activation; GPT: a transformer block) as a
  // unit whose `forward(input)` checkpointing can run again during backward. `forward` is kept
  // until then: it must capture what it uses by value (tensors) or live as long as the model.
  template <typename Forward>
  at::Tensor run_block(torch::nn::Module& unit, const at::Tensor& input, Forward forward) {
    if (checkpointing_ == ActivationCheckpointing::none) {
      return run_unit(unit, [&] { return forward(input); });
    }
    checkpointed_units_.insert(&unit);
    return checkpointed(
        checkpointing_,
        [this, &unit, forward](const at::Tensor& x) {
          return run_unit(unit, [&] { return forward(x); });
        },
        input);
  }

 private:
  ParameterGate* gate_ = nullptr;
  ActivationCheckpointing checkpointing_ = ActivationCheckpointing::none;
  std::set<const torch::nn::Module*> checkpointed_units_;
  std::set<const torch::nn::Module*> units_in_backward_;  // recorded while a gate is set
};

// Builds the model named by `spec` (see models/README.md) with its parameters in `dtype` on
// `device`. Parameter names (named_parameters()) are stable: they key the golden files.
std::shared_ptr<ZooModel> build_model(const ModelSpec& spec, at::ScalarType dtype,
                                      at::Device device);

}  // namespace trainrepro
