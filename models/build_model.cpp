// build_model: constructs a zoo model and initialises it deterministically from its seed, in
// float64 first so that every dtype starts from the same weights (rounded once).
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "models/gpt_model.h"
#include "models/mlp_model.h"
#include "models/parameter_names.h"
#include "models/torchscript_model.h"
#include "models/zoo_model.h"

namespace trainrepro {
namespace {

std::shared_ptr<ZooModel> construct_model(const ModelSpec& spec) {
  if (spec.name == "mlp" && std::holds_alternative<MlpOptions>(spec.options)) {
    return std::make_shared<MlpModel>(std::get<MlpOptions>(spec.options));
  }
  if (spec.name == "gpt" && std::holds_alternative<GptOptions>(spec.options)) {
    return std::make_shared<GptModel>(std::get<GptOptions>(spec.options));
  }
  if (spec.name == "torchscript" && std::holds_alternative<TorchScriptOptions>(spec.options)) {
    return make_torchscript_model(std::get<TorchScriptOptions>(spec.options));
  }
  throw std::invalid_argument("unknown model \"" + spec.name +
                              "\", or options that belong to another model");
}

// Modules are visited in the order named_parameters() lists their parameters (pre-order, each
// module's own parameters in registration order), so a re-implementation that walks the names
// and draws from the same generator reproduces the weights exactly.
void init_parameters(torch::nn::Module& model, at::Generator& generator) {
  at::NoGradGuard no_grad;
  for (const std::shared_ptr<torch::nn::Module>& module : model.modules()) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(linear->weight.size(1)));
      linear->weight.uniform_(-bound, bound, generator);
      linear->bias.uniform_(-bound, bound, generator);
    } else if (auto* embedding = module->as<torch::nn::Embedding>()) {
      embedding->weight.normal_(0.0, 0.02, generator);
    } else if (auto* norm = module->as<torch::nn::LayerNorm>()) {
      norm->weight.fill_(1.0);
      norm->bias.fill_(0.0);
    } else if (!module->named_parameters(/*recurse=*/false).is_empty()) {
      throw std::logic_error("no initialisation rule for module " + module->name());
    }
  }
}

}  // namespace

std::shared_ptr<ZooModel> build_model(const ModelSpec& spec, at::ScalarType dtype,
                                      at::Device device) {
  std::shared_ptr<ZooModel> model = construct_model(spec);
  model->to(at::kDouble);
  // Your own model's weights are the file's; a zoo model's are drawn from its seed.
  if (!std::holds_alternative<TorchScriptOptions>(spec.options)) {
    at::Generator generator =
        at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(spec.seed));
    init_parameters(*model, generator);
  }
  model->to(device, dtype);
  // The user's requires_grad_(False), after the cast as their script does it (to() keeps it).
  for (auto& item : model->named_parameters(/*recurse=*/true)) {
    for (const std::string& entry : spec.frozen) {
      if (name_is_within(item.key(), entry)) item.value().requires_grad_(false);
    }
  }
  return model;
}

}  // namespace trainrepro
