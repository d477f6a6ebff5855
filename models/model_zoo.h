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

// Your own model, traced or scripted in Python and saved with torch.jit.save
// (models/torchscript_file.h): forward(inputs) returns the outputs the data's loss needs. Its
// weights come from the file; what is known of it is read when the scenario loads.
struct TorchScriptOptions {
  std::string file;    // as the scenario writes it
  std::string path;    // where it was read (relative to the scenario's folder)
  std::string sha256;  // of the file's bytes: part of the golden's key
  std::vector<std::string> parameter_names;  // named_parameters() order
  int64_t parameter_count = 0;
  // Where the graph converts to a fixed floating dtype (torch.jit.trace records x.to(dtype) and
  // factory dtypes as constants): "" when nowhere, else a count and the first place. A float64
  // run of such a model computes those values in the traced dtype.
  std::string fixed_dtype_conversions;
};

using ModelOptions = std::variant<MlpOptions, GptOptions, TorchScriptOptions>;

using ModelEntry = ZooEntry<ModelOptions>;

const std::vector<ModelEntry>& model_zoo();
const EnumSpellings<Activation>& activation_spellings();

}  // namespace trainrepro
