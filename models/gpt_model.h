// The "gpt" model of the zoo: a small pre-norm decoder with causal self-attention that also
// masks padding keys (token 0), trained on right-padded token sequences.
#pragma once
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "models/model_zoo.h"
#include "models/zoo_model.h"

namespace trainrepro {

class GptModel : public ZooModel {
 public:
  explicit GptModel(const GptOptions& options);
  // (N, S) token ids, S <= max_seq_len -> (N, S, vocab_size) logits
  at::Tensor forward(const at::Tensor& inputs);
  at::Tensor outputs(const Batch& batch) override { return forward(batch.inputs); }
  // Cross entropy summed over the positions where batch.mask is true.
  at::Tensor loss_sum_of(const at::Tensor& outputs, const Batch& batch) override;

 private:
  GptOptions options_;
  torch::nn::Embedding token_embedding_{nullptr};
  torch::nn::Embedding position_embedding_{nullptr};
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::nn::Linear head_{nullptr};
};

}  // namespace trainrepro
