#include "models/model_zoo.h"

#include "models/torchscript_file.h"

namespace trainrepro {
namespace {

ModelOptions read_mlp_options(ObjectReader& options) {
  MlpOptions mlp;
  if (options.has("dims")) mlp.dims = options.required_int_list("dims", 2, 1);
  options.note_known("dims");
  mlp.activation = options.optional_enum("activation", mlp.activation, activation_spellings());
  return mlp;
}

ModelOptions read_gpt_options(ObjectReader& options) {
  GptOptions gpt;
  gpt.vocab_size = options.optional_int("vocab_size", gpt.vocab_size, 2);
  gpt.max_seq_len = options.optional_int("max_seq_len", gpt.max_seq_len, 1);
  gpt.d_model = options.optional_int("d_model", gpt.d_model, 1);
  gpt.heads = options.optional_int("heads", gpt.heads, 1);
  gpt.layers = options.optional_int("layers", gpt.layers, 1);
  if (gpt.d_model % gpt.heads != 0) {
    options.fail("heads", "d_model (" + std::to_string(gpt.d_model) +
                              ") must be divisible by heads (" + std::to_string(gpt.heads) + ")");
  }
  return gpt;
}

}  // namespace

const EnumSpellings<Activation>& activation_spellings() {
  static const EnumSpellings<Activation> spellings = {
      {Activation::relu, "relu"}, {Activation::gelu, "gelu"}, {Activation::tanh, "tanh"}};
  return spellings;
}

const std::vector<ModelEntry>& model_zoo() {
  static const std::vector<ModelEntry> zoo = {
      {"mlp", "multi-layer perceptron for classification or regression data", read_mlp_options},
      {"gpt", "small GPT-style decoder for token sequences (causal attention, padding mask)",
       read_gpt_options},
      {"torchscript", "your own module, traced or scripted and saved with torch.jit.save",
       read_torchscript_options, /*seeded=*/false},
  };
  return zoo;
}

}  // namespace trainrepro
