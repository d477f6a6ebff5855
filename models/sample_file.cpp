#include "models/sample_file.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "harness/files/safetensors.h"
#include "models/shape_text.h"
#include "models/user_file_path.h"

namespace trainrepro {
namespace {

constexpr int64_t kIgnoreIndex = -100;  // Hugging Face's labels for "not in the loss"

std::string describe(const std::string& name, const at::Tensor& tensor) {
  return "\"" + name + "\" " + python_shape(tensor) + " " + std::string(c10::toString(tensor.scalar_type()));
}

bool is_integer(const at::Tensor& tensor) {
  return at::isIntegralType(tensor.scalar_type(), /*includeBool=*/false);
}

// Everything that can be wrong with the file's tensors, said once with what was found.
class SampleFileCheck {
 public:
  SampleFileCheck(ObjectReader& options, const std::string& origin)
      : options_(options), origin_(origin) {}

  [[noreturn]] void fail(const std::string& message) const {
    options_.fail("file", origin_ + ": " + message);
  }

  void require(bool condition, const std::string& message) const {
    if (!condition) fail(message);
  }

 private:
  ObjectReader& options_;
  std::string origin_;
};

SafetensorsData classify(const SafetensorsFile& file, const SampleFileCheck& check,
                         SampleFileTensors& tensors) {
  const std::set<std::string> known = {"inputs", "targets", "attention_mask"};
  for (const std::string& name : file.names) {
    check.require(known.count(name) != 0,
                  "unknown tensor \"" + name +
                      "\"; expected \"inputs\", \"targets\" and optionally \"attention_mask\" "
                      "(rename input_ids to inputs and labels to targets)");
  }
  check.require(file.tensors.count("inputs") && file.tensors.count("targets"),
                "expected tensors \"inputs\" and \"targets\", found " +
                    std::to_string(file.names.size()) + " tensor(s)");
  const at::Tensor inputs = file.tensors.at("inputs");
  const at::Tensor targets = file.tensors.at("targets");
  const bool has_mask = file.tensors.count("attention_mask") != 0;
  check.require(inputs.dim() == 2 && inputs.size(0) >= 1 && inputs.size(1) >= 1,
                "expected \"inputs\" of shape (samples, features) or (samples, tokens), found " +
                    describe("inputs", inputs));
  const int64_t samples = inputs.size(0);
  check.require(targets.dim() >= 1 && targets.size(0) == samples,
                "expected \"targets\" with one row per sample (" + std::to_string(samples) +
                    "), found " + describe("targets", targets));

  SafetensorsData data;
  data.samples = samples;
  if (inputs.is_floating_point()) {
    check.require(!has_mask, "\"attention_mask\" belongs to token data; these inputs are features " +
                                 describe("inputs", inputs));
    check.require(inputs.isfinite().all().item<bool>(), "\"inputs\" holds NaN or Inf");
    data.features = inputs.size(1);
    tensors.inputs = inputs.to(at::kDouble);
    if (is_integer(targets) && targets.dim() == 1) {
      check.require(targets.min().item<int64_t>() >= 0,
                    "class ids in \"targets\" must be >= 0, found " +
                        std::to_string(targets.min().item<int64_t>()));
      data.kind = SampleFileKind::classification;
      data.classes_needed = targets.max().item<int64_t>() + 1;
      tensors.targets = targets.to(at::kLong);
    } else if (targets.is_floating_point() && targets.dim() == 2) {
      check.require(targets.isfinite().all().item<bool>(), "\"targets\" holds NaN or Inf");
      data.kind = SampleFileKind::regression;
      data.outputs = targets.size(1);
      tensors.targets = targets.to(at::kDouble);
    } else {
      check.fail("expected \"targets\" of class ids (samples,) integer or regression values "
                 "(samples, outputs) floating, found " + describe("targets", targets));
    }
    return data;
  }
  check.require(is_integer(inputs), "expected \"inputs\" floating (features) or integer (token "
                                    "ids), found " + describe("inputs", inputs));
  check.require(is_integer(targets) && targets.sizes() == inputs.sizes(),
                "token data needs integer \"targets\" shaped like \"inputs\" " + python_shape(inputs) +
                    ", found " + describe("targets", targets));
  check.require(inputs.min().item<int64_t>() >= 0,
                "token ids in \"inputs\" must be >= 0, found " +
                    std::to_string(inputs.min().item<int64_t>()));
  at::Tensor mask = targets.ne(kIgnoreIndex);
  if (has_mask) {
    const at::Tensor attention = file.tensors.at("attention_mask");
    check.require(attention.sizes() == inputs.sizes() &&
                      (attention.scalar_type() == at::kBool || is_integer(attention)),
                  "expected \"attention_mask\" of 0/1 shaped like \"inputs\" " +
                      python_shape(inputs) + ", found " + describe("attention_mask", attention));
    check.require(attention.to(at::kLong).ge(0).logical_and(attention.to(at::kLong).le(1)).all().item<bool>(),
                  "\"attention_mask\" must hold only 0 and 1");
    mask = mask.logical_and(attention.to(at::kBool));
  }
  const at::Tensor counted = targets.masked_select(mask);
  check.require(counted.numel() > 0, "no target counts in the loss (every one masked or -100)");
  check.require(counted.min().item<int64_t>() >= 0,
                "token ids in \"targets\" must be >= 0 where they count (-100 marks one that "
                "does not), found " + std::to_string(counted.min().item<int64_t>()));
  data.kind = SampleFileKind::tokens;
  data.length = inputs.size(1);
  data.vocab_needed = std::max(inputs.max().item<int64_t>(), counted.max().item<int64_t>()) + 1;
  tensors.inputs = inputs.to(at::kLong);
  tensors.targets = targets.to(at::kLong).masked_fill(mask.logical_not(), 0);
  tensors.mask = mask;
  return data;
}

}  // namespace

DataOptions read_safetensors_data(ObjectReader& options) {
  const UserFile file = read_user_file(options, "file", "a safetensors file of samples");
  const SampleFileCheck check(options, file.path);
  SafetensorsFile contents;
  try {
    contents = read_safetensors(file.path);
  } catch (const std::exception& failure) {
    options.fail("file", std::string("expected a safetensors file, found: ") + failure.what());
  }
  auto tensors = std::make_shared<SampleFileTensors>();
  SafetensorsData data = classify(contents, check, *tensors);
  data.file = file.as_written;
  data.path = file.path;
  data.sha256 = file.sha256;
  data.tensors = std::move(tensors);
  return data;
}

Batch samples_from_file(const SafetensorsData& data, int64_t begin, int64_t end,
                        at::ScalarType dtype, at::Device device) {
  const at::Tensor rows = at::arange(begin, end, at::kLong).remainder(data.samples);
  const SampleFileTensors& tensors = *data.tensors;
  const auto to_target = [&](const at::Tensor& t) {
    const at::Tensor picked = t.index_select(0, rows);
    return picked.is_floating_point() ? picked.to(device, dtype) : picked.to(device);
  };
  Batch batch;
  batch.samples = end - begin;
  batch.items = batch.samples;
  batch.inputs = to_target(tensors.inputs);
  batch.targets = to_target(tensors.targets);
  if (tensors.mask.defined()) {
    const at::Tensor mask = tensors.mask.index_select(0, rows);
    batch.items = mask.sum().item<int64_t>();
    batch.mask = mask.to(device);
  }
  return batch;
}

}  // namespace trainrepro
