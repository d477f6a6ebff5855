#include "models/model_data_fit.h"

#include <algorithm>

namespace trainrepro {
namespace {

std::string number(int64_t value) { return std::to_string(value); }

std::optional<FitProblem> mlp_fit(const MlpOptions& mlp, const DataOptions& data) {
  int64_t features = 0, outputs = 0;
  const auto* file = std::get_if<SafetensorsData>(&data);
  if (const auto* c = std::get_if<ClassificationData>(&data)) {
    features = c->features;
    outputs = c->classes;
  } else if (const auto* r = std::get_if<RegressionData>(&data)) {
    features = r->features;
    outputs = r->outputs;
  } else if (file != nullptr && file->kind == SampleFileKind::classification) {
    // A file need not hold every class: the largest id present must have an output.
    features = file->features;
    outputs = std::max(mlp.dims.back(), file->classes_needed);
    if (mlp.dims.back() < file->classes_needed) {
      return FitProblem{"dims", "the last dimension (" + number(mlp.dims.back()) +
                                    ") must exceed the largest class id in the file's targets (" +
                                    number(file->classes_needed - 1) + ")"};
    }
  } else if (file != nullptr && file->kind == SampleFileKind::regression) {
    features = file->features;
    outputs = file->outputs;
  } else {
    return FitProblem{"",
                      "model \"mlp\" takes feature vectors; data \"token_sequences\" needs "
                      "model \"gpt\""};
  }
  if (mlp.dims.front() != features) {
    return FitProblem{"dims", "the first dimension (" + number(mlp.dims.front()) +
                                  ") must equal the data's features (" + number(features) + ")"};
  }
  if (mlp.dims.back() != outputs) {
    return FitProblem{"dims", "the last dimension (" + number(mlp.dims.back()) +
                                  ") must equal the data's classes or outputs (" + number(outputs) +
                                  ")"};
  }
  return std::nullopt;
}

std::optional<FitProblem> gpt_fit(const GptOptions& gpt, const DataOptions& data) {
  if (const auto* file = std::get_if<SafetensorsData>(&data)) {
    if (file->kind != SampleFileKind::tokens) {
      return FitProblem{"", "model \"gpt\" takes token sequences; the file holds feature data"};
    }
    if (file->vocab_needed > gpt.vocab_size) {
      return FitProblem{"vocab_size", "vocab_size (" + number(gpt.vocab_size) +
                                          ") must exceed the largest token id in the file (" +
                                          number(file->vocab_needed - 1) + ")"};
    }
    if (file->length > gpt.max_seq_len) {
      return FitProblem{"max_seq_len", "max_seq_len (" + number(gpt.max_seq_len) +
                                           ") is shorter than the file's sequences (" +
                                           number(file->length) + ")"};
    }
    return std::nullopt;
  }
  const auto* tokens = std::get_if<TokenSequenceData>(&data);
  if (tokens == nullptr) {
    return FitProblem{"", "model \"gpt\" takes token sequences; use data \"token_sequences\""};
  }
  if (tokens->vocab_size != gpt.vocab_size) {
    return FitProblem{"vocab_size", "vocab_size (" + number(gpt.vocab_size) +
                                        ") must equal the data's vocab_size (" +
                                        number(tokens->vocab_size) + ")"};
  }
  if (tokens->max_length > gpt.max_seq_len) {
    return FitProblem{"max_seq_len", "max_seq_len (" + number(gpt.max_seq_len) +
                                         ") is shorter than the data's max_length (" +
                                         number(tokens->max_length) + ")"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<FitProblem> check_model_fits_data(const ModelOptions& model,
                                                const DataOptions& data) {
  if (const auto* mlp = std::get_if<MlpOptions>(&model)) return mlp_fit(*mlp, data);
  // Your own model's shapes are checked on its first forward (the message names the file).
  if (std::holds_alternative<TorchScriptOptions>(model)) return std::nullopt;
  return gpt_fit(std::get<GptOptions>(model), data);
}

}  // namespace trainrepro
