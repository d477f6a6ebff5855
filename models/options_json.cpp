#include "models/options_json.h"

namespace trainrepro {

nlohmann::json model_options_to_json(const ModelOptions& options) {
  if (const auto* mlp = std::get_if<MlpOptions>(&options)) {
    return {{"dims", mlp->dims},
            {"activation", spelling_of(mlp->activation, activation_spellings())}};
  }
  if (const auto* user = std::get_if<TorchScriptOptions>(&options)) {
    return {{"file", user->file}, {"sha256", user->sha256}};
  }
  const auto& gpt = std::get<GptOptions>(options);
  return {{"vocab_size", gpt.vocab_size},
          {"max_seq_len", gpt.max_seq_len},
          {"d_model", gpt.d_model},
          {"heads", gpt.heads},
          {"layers", gpt.layers}};
}

nlohmann::json data_options_to_json(const DataOptions& options) {
  if (const auto* classification = std::get_if<ClassificationData>(&options)) {
    return {{"features", classification->features}, {"classes", classification->classes}};
  }
  if (const auto* regression = std::get_if<RegressionData>(&options)) {
    return {{"features", regression->features},
            {"outputs", regression->outputs},
            {"noise", regression->noise}};
  }
  if (const auto* file = std::get_if<SafetensorsData>(&options)) {
    return {{"file", file->file}, {"sha256", file->sha256}};
  }
  const auto& tokens = std::get<TokenSequenceData>(options);
  return {{"vocab_size", tokens.vocab_size},
          {"min_length", tokens.min_length},
          {"max_length", tokens.max_length}};
}

}  // namespace trainrepro
