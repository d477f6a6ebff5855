// The model zoo: every model a scenario can name, with its options read strictly from the
// scenario's "model.options". To add a model: define its options struct, add it to
// ModelOptions, and add an entry to model_zoo() in model_zoo.cpp (see models/README.md).
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "models/zoo_entry.h"

namespace trainrepro {

enum class Activation { relu, gelu, tanh };

// A stack of Linear layers with `activation` between them. dims = {in, hidden…, out}.
struct MlpOptions {
  std::vector<int64_t> dims = {16, 64, 4};
  Activation activation = Activation::relu;
};

// A small GPT-style decoder: token + position embedding, `layers` pre-norm blocks of causal
// self-attention and MLP, a final layer norm and a tied-free output head.
struct GptOptions {
  int64_t vocab_size = 64;
  int64_t max_seq_len = 16;
  int64_t d_model = 32;
  int64_t heads = 4;
  int64_t layers = 2;
};

using ModelOptions = std::variant<MlpOptions, GptOptions>;

using ModelEntry = ZooEntry<ModelOptions>;

const std::vector<ModelEntry>& model_zoo();
const EnumSpellings<Activation>& activation_spellings();

}  // namespace trainrepro
