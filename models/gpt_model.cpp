// The "gpt" model. Registration order fixes named_parameters(), which keys the golden files and
// which the Python cross-check rebuilds the model from: keep names and order as they are.
#include "models/gpt_model.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "models/item_loss.h"
#include "models/linear_saving_weight.h"

namespace trainrepro {
namespace {

torch::nn::LayerNorm make_layer_norm(int64_t d_model) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(1e-5));
}

class GptBlockImpl : public torch::nn::Module {
 public:
  explicit GptBlockImpl(const GptOptions& options) : heads_(options.heads) {
    const int64_t d = options.d_model;
    ln1_ = register_module("ln1", make_layer_norm(d));
    attn_qkv_ = register_module("attn_qkv", torch::nn::Linear(d, 3 * d));
    attn_out_ = register_module("attn_out", torch::nn::Linear(d, d));
    ln2_ = register_module("ln2", make_layer_norm(d));
    mlp_in_ = register_module("mlp_in", torch::nn::Linear(d, 4 * d));
    mlp_out_ = register_module("mlp_out", torch::nn::Linear(4 * d, d));
  }

  // x (N, S, D); allowed (N, 1, S, S): may query i attend to key j. `partitioned`: the
  // parameters are released between units (ZeRO stage 3), see linear_saving_weight.h.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& allowed, bool partitioned) {
    const auto linear = [partitioned](torch::nn::Linear& layer, const at::Tensor& input) {
      return apply_linear(*layer, input, partitioned);
    };
    const int64_t n = x.size(0), s = x.size(1), d = x.size(2), head_dim = d / heads_;
    // (N, S, D) -> (N, H, S, D/H); head h owns channels [h*D/H, (h+1)*D/H)
    const auto split_heads = [&](const at::Tensor& t) {
      return t.reshape({n, s, heads_, head_dim}).transpose(1, 2);
    };
    const std::vector<at::Tensor> qkv = linear(attn_qkv_, ln1_(x)).chunk(3, /*dim=*/-1);
    const at::Tensor q = split_heads(qkv[0]), k = split_heads(qkv[1]), v = split_heads(qkv[2]);
    const at::Tensor scores =
        q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));  // (N,H,S,S)
    const at::Tensor probs =
        scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity())
            .softmax(/*dim=*/-1);
    const at::Tensor attended = probs.matmul(v).transpose(1, 2).reshape({n, s, d});
    const at::Tensor h = x + linear(attn_out_, attended);
    return h + linear(mlp_out_, at::gelu(linear(mlp_in_, ln2_(h)), /*approximate=*/"none"));
  }

 private:
  int64_t heads_;
  torch::nn::LayerNorm ln1_{nullptr};
  torch::nn::Linear attn_qkv_{nullptr};
  torch::nn::Linear attn_out_{nullptr};
  torch::nn::LayerNorm ln2_{nullptr};
  torch::nn::Linear mlp_in_{nullptr};
  torch::nn::Linear mlp_out_{nullptr};
};

}  // namespace

GptModel::GptModel(const GptOptions& options) : options_(options) {
  if (options.heads < 1 || options.d_model % options.heads != 0) {
    throw std::invalid_argument("gpt: d_model (" + std::to_string(options.d_model) +
                                ") must be divisible by heads (" + std::to_string(options.heads) +
                                ")");
  }
  token_embedding_ =
      register_module("token_embedding", torch::nn::Embedding(options.vocab_size, options.d_model));
  position_embedding_ = register_module("position_embedding",
                                        torch::nn::Embedding(options.max_seq_len, options.d_model));
  for (int64_t i = 0; i < options.layers; ++i) {
    blocks_->push_back(std::make_shared<GptBlockImpl>(options));
  }
  register_module("blocks", blocks_);
  ln_f_ = register_module("ln_f", make_layer_norm(options.d_model));
  head_ = register_module("head", torch::nn::Linear(options.d_model, options.vocab_size));
}

at::Tensor GptModel::forward(const at::Tensor& inputs) {
  const int64_t n = inputs.size(0), s = inputs.size(1);
  if (s > options_.max_seq_len) {
    throw std::invalid_argument("gpt: sequence length " + std::to_string(s) +
                                " exceeds max_seq_len " + std::to_string(options_.max_seq_len));
  }
  // Key j is visible to query i iff j <= i and j is not padding. Right padding means every
  // query keeps at least key 0, so no softmax row is all -inf.
  const at::Tensor causal = at::ones({s, s}, inputs.options().dtype(at::kBool)).tril();
  const at::Tensor allowed = causal.logical_and(inputs.ne(0).view({n, 1, 1, s}));
  // Each layer or block is one unit for ZeRO stage 3's gather and release.
  at::Tensor x =
      run_unit(*token_embedding_, [&] { return token_embedding_(inputs); }) +
      run_unit(*position_embedding_, [&] { return position_embedding_->weight.narrow(0, 0, s); });
  for (const auto& block : *blocks_) {
    auto* gpt_block = block->as<GptBlockImpl>();
    x = run_block(*gpt_block, x, [this, gpt_block, allowed](const at::Tensor& input) {
      return gpt_block->forward(input, allowed, parameters_partitioned());
    });
  }
  x = run_unit(*ln_f_, [&] { return ln_f_(x); });
  return run_unit(*head_, [&] { return apply_linear(*head_, x, parameters_partitioned()); });
}

at::Tensor GptModel::loss_sum_of(const at::Tensor& outputs, const Batch& batch) {
  return summed_item_loss(outputs, batch);
}

}  // namespace trainrepro
