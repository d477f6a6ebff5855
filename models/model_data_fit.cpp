#include "models/model_data_fit.h"

namespace trainrepro {
namespace {

std::string number(int64_t value) { return std::to_string(value); }

std::optional<FitProblem> mlp_fit(const MlpOptions& mlp, const DataOptions& data) {
  int64_t features = 0, outputs = 0;
  if (const auto* c = std::get_if<ClassificationData>(&data)) {
    features = c->features;
    outputs = c->classes;
  } else if (const auto* r = std::get_if<RegressionData>(&data)) {
    features = r->features;
    outputs = r->outputs;
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
  return gpt_fit(std::get<GptOptions>(model), data);
}

}  // namespace trainrepro
