#include "models/torchscript_model.h"

#include <set>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "models/item_loss.h"
#include "models/shape_text.h"
#include "models/torchscript_file.h"

namespace trainrepro {
namespace {

class TorchScriptModel final : public ZooModel {
 public:
  explicit TorchScriptModel(const TorchScriptOptions& options)
      : path_(options.path), module_(load_torchscript_module(options.path)) {
    module_.train();
    std::set<const c10::TensorImpl*> seen;
    mirror(module_, *this, seen);
  }

  at::Tensor outputs(const Batch& batch) override {
    c10::IValue result;
    try {
      result = module_.forward({batch.inputs});
    } catch (const std::exception& failure) {
      const std::string what = failure.what();
      throw UserModelError(path_ + ": forward failed on inputs " + python_shape(batch.inputs) +
                               " " + std::string(c10::toString(batch.inputs.scalar_type())) +
                               ": " + what.substr(0, what.find('\n')));
    }
    // Hugging Face models traced with torchscript=True return a tuple, the logits first; traced
    // with strict=False, their output dict.
    if (result.isTuple() && !result.toTupleRef().elements().empty()) {
      result = result.toTupleRef().elements()[0];
    } else if (result.isGenericDict()) {
      const c10::Dict<c10::IValue, c10::IValue> dict = result.toGenericDict();
      std::string keys;
      for (const auto& entry : dict) {
        if (entry.key().isString() && entry.key().toStringRef() == "logits") {
          result = entry.value();
          keys.clear();
          break;
        }
        keys += (keys.empty() ? "" : ", ") +
                (entry.key().isString() ? entry.key().toStringRef() : entry.key().tagKind());
      }
      if (!keys.empty()) {
        throw UserModelError(path_ + ": forward returned a dict without \"logits\" (keys: " + keys +
                             "); return the outputs tensor");
      }
    }
    if (!result.isTensor()) {
      throw UserModelError(path_ + ": forward must return the outputs as a tensor (or a tuple "
                                   "whose first element they are, or a dict with \"logits\"), "
                                   "found " + result.tagKind());
    }
    at::Tensor outputs = result.toTensor();
    check_shape(outputs, batch);
    return outputs;
  }

  at::Tensor loss_sum_of(const at::Tensor& outputs, const Batch& batch) override {
    return summed_item_loss(outputs, batch);
  }

  // Buffers (a causal mask, running statistics) live only in the TorchScript module: cast the
  // floating ones with the parameters, and move every one.
  void to(at::Device device, at::ScalarType dtype, bool non_blocking) override {
    ZooModel::to(device, dtype, non_blocking);
    cast_buffers(device, dtype);
  }
  void to(at::ScalarType dtype, bool non_blocking) override {
    ZooModel::to(dtype, non_blocking);
    cast_buffers(std::nullopt, dtype);
  }
  void to(at::Device device, bool non_blocking) override {
    ZooModel::to(device, non_blocking);
    cast_buffers(device, std::nullopt);
  }

 private:
  // The same tensors registered under the same names: set_data() by to() and by ZeRO's flat
  // buffers changes what both the tree and the TorchScript module see.
  // A tied tensor (met twice) is registered once, where it is met first, as Python does.
  static void mirror(const torch::jit::Module& from, torch::nn::Module& to,
                     std::set<const c10::TensorImpl*>& seen) {
    for (const auto& parameter : from.named_parameters(/*recurse=*/false)) {
      if (seen.insert(parameter.value.unsafeGetTensorImpl()).second) {
        to.register_parameter(parameter.name, parameter.value, /*requires_grad=*/true);
      }
    }
    for (const auto& child : from.named_children()) {
      mirror(child.value, *to.register_module(child.name, std::make_shared<torch::nn::Module>()),
             seen);
    }
  }

  void cast_buffers(std::optional<at::Device> device, std::optional<at::ScalarType> dtype) {
    at::NoGradGuard no_grad;
    for (const auto& buffer : module_.named_buffers(/*recurse=*/true)) {
      at::Tensor tensor = buffer.value;
      const at::ScalarType type =
          dtype && tensor.is_floating_point() ? *dtype : tensor.scalar_type();
      tensor.set_data(tensor.to(device.value_or(tensor.device()), type));
    }
  }

  // The outputs the data's loss needs, said with the file's name before torch says it worse.
  void check_shape(const at::Tensor& outputs, const Batch& batch) const {
    const int64_t n = batch.inputs.size(0);
    std::string expected;
    bool fits = outputs.dim() >= 1 && outputs.size(0) == n && outputs.is_floating_point();
    if (batch.mask.defined()) {
      expected = "(" + std::to_string(n) + ", " + std::to_string(batch.inputs.size(1)) +
                 ", vocabulary) logits for token data";
      fits = fits && outputs.dim() == 3 && outputs.size(1) == batch.inputs.size(1) &&
             outputs.size(2) > batch.targets.max().item<int64_t>();
    } else if (at::isIntegralType(batch.targets.scalar_type(), /*includeBool=*/false)) {
      expected = "(" + std::to_string(n) + ", classes) logits with more classes than the largest "
                 "class id (" + std::to_string(batch.targets.max().item<int64_t>()) + ")";
      fits = fits && outputs.dim() == 2 && outputs.size(1) > batch.targets.max().item<int64_t>();
    } else {
      expected = python_shape(batch.targets) + " predictions for regression";
      fits = fits && outputs.sizes() == batch.targets.sizes();
    }
    if (!fits) {
      throw UserModelError(path_ + ": forward returned " + python_shape(outputs) + " " +
                               std::string(c10::toString(outputs.scalar_type())) +
                               "; the data needs " + expected);
    }
  }

  std::string path_;
  torch::jit::Module module_;
};

}  // namespace

std::shared_ptr<ZooModel> make_torchscript_model(const TorchScriptOptions& options) {
  return std::make_shared<TorchScriptModel>(options);
}

}  // namespace trainrepro
