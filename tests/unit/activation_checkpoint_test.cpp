// Activation checkpointing (models/activation_checkpoint.h): the block really runs again in
// backward, keeps only its input, and gives the gradients autograd gives without it, except the
// reentrant form's known hole: a block whose input has no history is never reached.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "models/activation_checkpoint.h"
#include "models/sample_source.h"
#include "models/zoo_model.h"

namespace trainrepro {
namespace {

std::vector<at::Tensor> gradients_of(ZooModel& model, const Batch& batch) {
  model.zero_grad();
  model.loss_sum(batch).backward();
  std::vector<at::Tensor> gradients;
  for (const at::Tensor& parameter : model.parameters()) {
    gradients.push_back(parameter.grad().defined() ? parameter.grad().clone() : at::Tensor());
  }
  return gradients;
}

void expect_every_gradient_equal(const std::vector<at::Tensor>& actual,
                                 const std::vector<at::Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(actual[i].defined()) << "parameter " << i;
    EXPECT_TRUE(at::allclose(actual[i], expected[i], 1e-12, 1e-14)) << "parameter " << i;
  }
}

ModelSpec mlp_spec() {
  MlpOptions options;
  options.dims = {16, 24, 24, 4};
  return {{"mlp", options, 3}};
}

ModelSpec gpt_spec() {
  GptOptions options;
  options.layers = 3;
  return {{"gpt", options, 4}};
}

Batch batch_for(const ModelSpec& spec) {
  const DataSpec data = spec.name == "gpt" ? DataSpec{"token_sequences", TokenSequenceData{}, 5}
                                           : DataSpec{"classification", ClassificationData{}, 5};
  return SampleSource(data).samples(0, 6, at::kDouble, at::kCPU);
}

struct GradientsBothWays {
  std::vector<at::Tensor> without, with;
  std::shared_ptr<ZooModel> model;
};

// One batch's gradients of the same model without checkpointing, then with `mode`.
GradientsBothWays gradients_both_ways(const ModelSpec& spec, ActivationCheckpointing mode) {
  const Batch batch = batch_for(spec);
  GradientsBothWays result;
  result.model = build_model(spec, at::kDouble, at::kCPU);
  result.without = gradients_of(*result.model, batch);
  result.model->set_activation_checkpointing(mode);
  result.with = gradients_of(*result.model, batch);
  return result;
}

TEST(ActivationCheckpoint, BlockRunsAgainInBackwardAndKeepsOnlyItsInput) {
  const at::Tensor weight = at::randn({8, 8}, at::kDouble).requires_grad_(true);
  const at::Tensor input = at::randn({4, 8}, at::kDouble).requires_grad_(true);
  int runs = 0;
  const BlockForward block = [&](const at::Tensor& x) {
    ++runs;
    return at::tanh(x.matmul(weight)).square();
  };
  const at::Tensor output = checkpointed(ActivationCheckpointing::reentrant, block, input);
  EXPECT_EQ(runs, 1);
  output.sum().backward();
  EXPECT_EQ(runs, 2);  // recomputed once, in backward
  const at::Tensor input_grad = input.grad().clone(), weight_grad = weight.grad().clone();
  input.mutable_grad().reset();
  weight.mutable_grad().reset();
  block(input).sum().backward();
  EXPECT_TRUE(at::allclose(input.grad(), input_grad, 0, 1e-14));
  EXPECT_TRUE(at::allclose(weight.grad(), weight_grad, 0, 1e-14));
}

class ModelCheckpointing : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelCheckpointing, NonReentrantGivesTheGradientsOfNoCheckpointing) {
  const ModelSpec spec = std::string(GetParam()) == "gpt" ? gpt_spec() : mlp_spec();
  const GradientsBothWays gradients =
      gradients_both_ways(spec, ActivationCheckpointing::non_reentrant);
  expect_every_gradient_equal(gradients.with, gradients.without);
  const std::vector<bool> recomputed = gradients.model->recomputed_parameters();
  EXPECT_GT(std::count(recomputed.begin(), recomputed.end(), true), 0);
  EXPECT_FALSE(recomputed.back());  // the head is never checkpointed
}

INSTANTIATE_TEST_SUITE_P(Zoo, ModelCheckpointing, ::testing::Values("mlp", "gpt"));

TEST(ActivationCheckpoint, ReentrantLeavesBlocksFedByTheDataWithoutGradient) {
  const GradientsBothWays gradients =
      gradients_both_ways(mlp_spec(), ActivationCheckpointing::reentrant);
  const std::vector<at::Tensor>& actual = gradients.with;
  const std::vector<at::Tensor>& expected = gradients.without;
  // layers.0 and layers.1 (weight, bias) are checkpointed blocks fed from the data; layers.2,
  // the head, still trains.
  for (size_t i = 0; i < 4; ++i) EXPECT_FALSE(actual[i].defined()) << "parameter " << i;
  for (size_t i = 4; i < 6; ++i) {
    EXPECT_TRUE(at::allclose(actual[i], expected[i], 1e-12, 1e-14)) << "parameter " << i;
  }
}

TEST(ActivationCheckpoint, ReentrantReachesEveryGptBlockThroughTheEmbeddings) {
  const GradientsBothWays gradients =
      gradients_both_ways(gpt_spec(), ActivationCheckpointing::reentrant);
  expect_every_gradient_equal(gradients.with, gradients.without);
}

}  // namespace
}  // namespace trainrepro
