// SampleSource: draws samples chunk by chunk so that a sample's value depends only on its index
// and the data seed, never on the range that asked for it.
#include "models/sample_source.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "models/sample_file.h"

namespace trainrepro {
namespace {

constexpr int64_t kChunkSamples = 64;
// Spreads data seeds apart; offset 0 is the teacher, offset c + 1 is chunk c.
constexpr uint64_t kSeedStride = 1000003;

const at::TensorOptions kFloat64 = at::TensorOptions().dtype(at::kDouble);
const at::TensorOptions kInt64 = at::TensorOptions().dtype(at::kLong);

at::Generator teacher_generator(int64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) * kSeedStride);
}

at::Generator chunk_generator(int64_t seed, int64_t chunk) {
  return at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) * kSeedStride +
                                                  static_cast<uint64_t>(chunk) + 1);
}

const char* generator_name(const ClassificationData&) { return "classification"; }
const char* generator_name(const RegressionData&) { return "regression"; }
const char* generator_name(const TokenSequenceData&) { return "token_sequences"; }
const char* generator_name(const SafetensorsData&) { return "safetensors"; }

// The fixed linear teacher that labels feature data: drawn once per source, not per chunk (at
// 256 features and outputs it was most of a micro-batch's data cost).
at::Tensor draw_teacher(const DataOptions& options, int64_t seed) {
  if (const auto* data = std::get_if<ClassificationData>(&options)) {
    return at::randn({data->classes, data->features}, teacher_generator(seed), kFloat64);  // (C, F)
  }
  if (const auto* data = std::get_if<RegressionData>(&options)) {
    return at::randn({data->outputs, data->features}, teacher_generator(seed), kFloat64);  // (O, F)
  }
  return at::Tensor();
}

// Each draw_chunk returns kChunkSamples samples in float64 (or int64) on the CPU.
Batch draw_chunk(const ClassificationData& data, const at::Tensor& teacher, int64_t seed,
                 int64_t chunk) {
  Batch batch;
  batch.inputs = at::randn({kChunkSamples, data.features}, chunk_generator(seed, chunk), kFloat64);
  batch.targets = batch.inputs.matmul(teacher.t()).argmax(/*dim=*/1);
  return batch;
}

Batch draw_chunk(const RegressionData& data, const at::Tensor& teacher, int64_t seed,
                 int64_t chunk) {
  at::Generator generator = chunk_generator(seed, chunk);
  Batch batch;
  batch.inputs = at::randn({kChunkSamples, data.features}, generator, kFloat64);
  const at::Tensor noise = at::randn({kChunkSamples, data.outputs}, generator, kFloat64);
  batch.targets = batch.inputs.matmul(teacher.t()) / std::sqrt(static_cast<double>(data.features)) +
                  data.noise * noise;
  return batch;
}

Batch draw_chunk(const TokenSequenceData& data, const at::Tensor&, int64_t seed, int64_t chunk) {
  at::Generator generator = chunk_generator(seed, chunk);
  const int64_t width = data.max_length;
  const at::Tensor lengths =
      at::randint(data.min_length, data.max_length + 1, {kChunkSamples}, generator, kInt64);  // (N)
  const at::Tensor tokens =
      at::randint(1, data.vocab_size, {kChunkSamples, width}, generator, kInt64);  // (N, T)
  const at::Tensor positions = at::arange(width, kInt64);                          // (T)
  const at::Tensor next_tokens =
      at::cat({tokens.narrow(1, 1, width - 1), at::zeros({kChunkSamples, 1}, kInt64)}, 1);
  Batch batch;
  batch.inputs = tokens.masked_fill(positions.ge(lengths.unsqueeze(1)), 0);
  batch.mask = positions.lt(lengths.unsqueeze(1) - 1);
  batch.targets = next_tokens.masked_fill(batch.mask.logical_not(), 0);
  return batch;
}

Batch draw_chunk(const SafetensorsData&, const at::Tensor&, int64_t, int64_t) {
  throw std::logic_error("samples from a file are not drawn in chunks");
}

at::Tensor concat_and_slice(const std::vector<at::Tensor>& parts, int64_t offset, int64_t size) {
  return at::cat(parts).narrow(0, offset, size);
}

}  // namespace

SampleSource::SampleSource(const DataSpec& spec) : spec_(spec) {
  const std::string expected =
      std::visit([](const auto& data) { return generator_name(data); }, spec.options);
  if (spec.name != expected) {
    throw std::invalid_argument("unknown data generator \"" + spec.name +
                                "\", or options that belong to \"" + expected + "\"");
  }
  teacher_ = draw_teacher(spec.options, spec.seed);
}

Batch SampleSource::samples(int64_t begin, int64_t end, at::ScalarType dtype,
                            at::Device device) const {
  if (begin < 0 || end < begin) {
    throw std::invalid_argument("bad sample range [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ")");
  }
  if (const auto* file = std::get_if<SafetensorsData>(&spec_.options)) {
    return samples_from_file(*file, begin, end, dtype, device);
  }
  // An empty range still draws one chunk, so its tensors have the right trailing shapes.
  const int64_t first_chunk = begin / kChunkSamples;
  const int64_t last_chunk = std::max(first_chunk, (end - 1) / kChunkSamples);
  std::vector<at::Tensor> inputs, targets, masks;
  for (int64_t chunk = first_chunk; chunk <= last_chunk; ++chunk) {
    const Batch part = std::visit(
        [&](const auto& data) { return draw_chunk(data, teacher_, spec_.seed, chunk); }, spec_.options);
    inputs.push_back(part.inputs);
    targets.push_back(part.targets);
    if (part.mask.defined()) masks.push_back(part.mask);
  }
  const int64_t offset = begin - first_chunk * kChunkSamples;
  const auto to_target = [&](const at::Tensor& t) {
    return t.is_floating_point() ? t.to(device, dtype) : t.to(device);
  };
  Batch batch;
  batch.samples = end - begin;
  batch.items = batch.samples;
  batch.inputs = to_target(concat_and_slice(inputs, offset, batch.samples));
  batch.targets = to_target(concat_and_slice(targets, offset, batch.samples));
  if (!masks.empty()) {
    const at::Tensor mask = concat_and_slice(masks, offset, batch.samples);
    batch.items = mask.sum().item<int64_t>();
    batch.mask = mask.to(device);
  }
  return batch;
}

}  // namespace trainrepro
