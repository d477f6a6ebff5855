// The "mlp" model: parameters "layers.{i}.weight" / "layers.{i}.bias", one Linear per pair of dims.
#include "models/mlp_model.h"

#include <stdexcept>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include "models/item_loss.h"
#include "models/linear_saving_weight.h"

namespace trainrepro {
namespace {

at::Tensor activate(const at::Tensor& x, Activation activation) {
  switch (activation) {
    case Activation::relu:
      return at::relu(x);
    case Activation::gelu:
      return at::gelu(x, /*approximate=*/"none");
    case Activation::tanh:
      return at::tanh(x);
  }
  throw std::invalid_argument("unknown activation");
}

}  // namespace

MlpModel::MlpModel(const MlpOptions& options) : activation_(options.activation) {
  if (options.dims.size() < 2) {
    throw std::invalid_argument("mlp needs at least two dims (input and output)");
  }
  for (size_t i = 0; i + 1 < options.dims.size(); ++i) {
    layers_->push_back(torch::nn::Linear(options.dims[i], options.dims[i + 1]));
  }
  register_module("layers", layers_);
}

at::Tensor MlpModel::forward(const at::Tensor& inputs) {
  at::Tensor x = inputs;
  for (size_t i = 0; i < layers_->size(); ++i) {
    auto& layer = layers_->at<torch::nn::LinearImpl>(i);
    if (i + 1 == layers_->size()) {
      // The output layer is the model's head: like transformers' lm_head, never checkpointed.
      x = run_unit(layer, [&] { return apply_linear(layer, x, parameters_partitioned()); });
      break;
    }
    // A hidden block is a layer with the activation after it: what a checkpoint wraps.
    x = run_block(layer, x, [this, &layer](const at::Tensor& input) {
      return activate(apply_linear(layer, input, parameters_partitioned()), activation_);
    });
  }
  return x;
}

at::Tensor MlpModel::loss_sum_of(const at::Tensor& outputs, const Batch& batch) {
  return summed_item_loss(outputs, batch);
}

}  // namespace trainrepro
