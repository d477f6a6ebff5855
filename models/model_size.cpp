#include "models/model_size.h"

#include <limits>
#include <type_traits>

namespace trainrepro {
namespace {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

// a * b + c, saturating: options are checked for sign by their readers, not for size.
int64_t multiply_add(int64_t a, int64_t b, int64_t c = 0) {
  int64_t product = 0, sum = 0;
  if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, c, &sum)) {
    return kSaturated;
  }
  return sum;
}

int64_t add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kSaturated : sum;
}


}  // namespace

int64_t parameter_count(const ModelOptions& options) {
  return std::visit(
      [](const auto& model) -> int64_t {
        using Options = std::decay_t<decltype(model)>;
        if constexpr (std::is_same_v<Options, TorchScriptOptions>) {
          return model.parameter_count;
        } else if constexpr (std::is_same_v<Options, MlpOptions>) {
          int64_t count = 0;  // each Linear: weight and bias
          for (size_t i = 0; i + 1 < model.dims.size(); ++i) {
            count = add(count, multiply_add(model.dims[i], model.dims[i + 1], model.dims[i + 1]));
          }
          return count;
        } else {
          const int64_t d = model.d_model;
          // A block: two LayerNorms (4d), qkv (3d² + 3d), out (d² + d), MLP (8d² + 5d).
          const int64_t block = multiply_add(multiply_add(12, d), d, 13 * d);
          int64_t count = multiply_add(add(model.vocab_size, model.max_seq_len), d);  // embeddings
          count = add(count, multiply_add(model.layers, block));
          count = add(count, 2 * d);                                                // ln_f
          return add(count, multiply_add(d, model.vocab_size, model.vocab_size));  // head
        }
      },
      options);
}

bool holds_token_data(const DataOptions& data) {
  if (std::holds_alternative<TokenSequenceData>(data)) return true;
  const auto* file = std::get_if<SafetensorsData>(&data);
  return file != nullptr && file->kind == SampleFileKind::tokens;
}

int64_t tokens_per_sample(const DataOptions& data) {
  if (const auto* tokens = std::get_if<TokenSequenceData>(&data)) return tokens->max_length;
  if (const auto* file = std::get_if<SafetensorsData>(&data)) {
    return file->kind == SampleFileKind::tokens ? file->length : 1;
  }
  return 1;
}

int64_t activation_elements_per_sample(const ModelOptions& options, const DataOptions& data) {
  const int64_t tokens = tokens_per_sample(data);
  return std::visit(
      [tokens](const auto& model) -> int64_t {
        using Options = std::decay_t<decltype(model)>;
        if constexpr (std::is_same_v<Options, TorchScriptOptions>) {
          // Unknown without running it: the resource check counts its parameters, optimizer
          // state and data only (docs/your-own-bug.md).
          return 0;
        } else if constexpr (std::is_same_v<Options, MlpOptions>) {
          int64_t count = 0;  // each layer's input, pre-activation and output
          for (int64_t width : model.dims) count = add(count, multiply_add(3, width));
          return count;
        } else {
          const int64_t d = model.d_model;
          // Per token and block: ~16 d (norms, qkv, attention output, the 4d MLP twice), and
          // the attention scores and probabilities (2 × heads × tokens).
          const int64_t per_token_block = add(16 * d, multiply_add(2 * model.heads, tokens));
          const int64_t per_token =
              add(multiply_add(model.layers, per_token_block), multiply_add(3, model.vocab_size));
          return multiply_add(tokens, per_token);
        }
      },
      options);
}

int64_t data_elements_per_sample(const DataOptions& data) {
  return std::visit(
      [](const auto& options) -> int64_t {
        using Options = std::decay_t<decltype(options)>;
        if constexpr (std::is_same_v<Options, ClassificationData>) {
          return add(options.features, 1);
        } else if constexpr (std::is_same_v<Options, RegressionData>) {
          return add(options.features, options.outputs);
        } else if constexpr (std::is_same_v<Options, SafetensorsData>) {
          switch (options.kind) {
            case SampleFileKind::classification: return add(options.features, 1);
            case SampleFileKind::regression: return add(options.features, options.outputs);
            case SampleFileKind::tokens: return multiply_add(3, options.length);
          }
          return 0;
        } else {
          return multiply_add(3, options.max_length);  // inputs, targets, mask
        }
      },
      data);
}

}  // namespace trainrepro
