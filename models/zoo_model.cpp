#include "models/zoo_model.h"

#include <unordered_set>

#include <torch/nn/modules/normalization.h>

namespace trainrepro {
namespace {

using TensorSet = std::unordered_set<const c10::TensorImpl*>;

TensorSet parameters_of(const std::set<const torch::nn::Module*>& units) {
  TensorSet result;
  for (const torch::nn::Module* unit : units) {
    for (const at::Tensor& parameter : unit->parameters(/*recurse=*/true)) {
      result.insert(parameter.unsafeGetTensorImpl());
    }
  }
  return result;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> ZooModel::trainable_named_parameters() const {
  std::vector<std::pair<std::string, at::Tensor>> trainable;
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    if (item.value().requires_grad()) trainable.emplace_back(item.key(), item.value());
  }
  return trainable;
}

std::vector<bool> ZooModel::parameters_without_decay() const {
  TensorSet normalisation;
  for (const auto& module : modules(/*include_self=*/false)) {
    if (module->as<torch::nn::LayerNorm>() == nullptr) continue;
    for (const at::Tensor& parameter : module->parameters(/*recurse=*/false)) {
      normalisation.insert(parameter.unsafeGetTensorImpl());
    }
  }
  std::vector<bool> result;
  for (const auto& [name, parameter] : trainable_named_parameters()) {
    const bool bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
    result.push_back(bias || normalisation.count(parameter.unsafeGetTensorImpl()) > 0);
  }
  return result;
}

std::vector<at::Tensor> ZooModel::frozen_parameters() const {
  std::vector<at::Tensor> frozen;
  for (const at::Tensor& parameter : parameters(/*recurse=*/true)) {
    if (!parameter.requires_grad()) frozen.push_back(parameter);
  }
  return frozen;
}

std::vector<bool> ZooModel::recomputed_parameters() {
  const TensorSet recomputed = parameters_of(checkpointed_units_);
  std::vector<bool> result;
  for (const auto& [name, parameter] : trainable_named_parameters()) {
    result.push_back(recomputed.count(parameter.unsafeGetTensorImpl()) > 0);
  }
  return result;
}

std::vector<bool> ZooModel::frozen_parameters_in_backward() {
  const TensorSet in_backward = parameters_of(units_in_backward_);
  std::vector<bool> result;
  for (const at::Tensor& parameter : frozen_parameters()) {
    result.push_back(in_backward.count(parameter.unsafeGetTensorImpl()) > 0);
  }
  return result;
}

}  // namespace trainrepro
