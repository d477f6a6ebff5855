// The reference engine's DeepSpeed semantics (boundary, scaling, zeroing, clipping, counters)
// and its optimizers checked against LibTorch's own torch::optim implementations.
#include <gtest/gtest.h>

#include <cmath>

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "harness/engine/gradient_clipping.h"
#include "harness/engine/optimizer.h"
#include "harness/engine/reference_engine.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

// Runs `steps` updates of our optimizer and of `reference` from the same start and gradients.
template <typename TorchOptimizer, typename TorchOptions>
double largest_difference_after_steps(const OptimizerConfig& config, TorchOptions options,
                                      int steps) {
  at::manual_seed(3);
  const at::Tensor start = at::randn({5, 7}, at::kDouble);
  at::Tensor ours = start.clone().requires_grad_(true);
  at::Tensor theirs = start.clone().requires_grad_(true);
  Optimizer optimizer(config);
  TorchOptimizer reference({theirs}, options);
  for (int step = 0; step < steps; ++step) {
    // Gradients near zero for some elements: where Adam is most sensitive.
    const at::Tensor gradient = at::randn({5, 7}, at::kDouble) * (step % 2 ? 1e-6 : 1.0);
    ours.mutable_grad() = gradient.clone();
    theirs.mutable_grad() = gradient.clone();
    optimizer.step({ours});
    reference.step();
  }
  return (ours - theirs).abs().max().item<double>();
}

TEST(Optimizer, AdamWMatchesTorchAdamW) {
  OptimizerConfig config;
  config.kind = OptimizerKind::adamw;
  config.lr = 0.01;
  config.weight_decay = 0.1;
  EXPECT_LT((largest_difference_after_steps<torch::optim::AdamW>(
                config, torch::optim::AdamWOptions(0.01).weight_decay(0.1), 6)),
            1e-14);
}

TEST(Optimizer, DeepSpeedAdamWithoutAdamWModeMatchesTorchAdamWithL2) {
  OptimizerConfig config;
  config.kind = OptimizerKind::adam;
  config.decoupled_weight_decay = false;
  config.lr = 0.01;
  config.weight_decay = 0.1;
  EXPECT_LT((largest_difference_after_steps<torch::optim::Adam>(
                config, torch::optim::AdamOptions(0.01).weight_decay(0.1), 6)),
            1e-14);
}

TEST(Optimizer, SgdWithMomentumNesterovAndDecayMatchesTorchSgd) {
  OptimizerConfig config;
  config.kind = OptimizerKind::sgd;
  config.lr = 0.1;
  config.momentum = 0.9;
  config.nesterov = true;
  config.weight_decay = 0.01;
  EXPECT_LT((largest_difference_after_steps<torch::optim::SGD>(
                config,
                torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01), 6)),
            1e-14);
}

TEST(GradientClipping, ScalesToMaxNormOnlyWhenAbove) {
  const at::Tensor gradient = at::tensor({3.0, 4.0}, at::kDouble);  // norm 5
  const double norm = std::sqrt(sum_of_squares({gradient}));
  EXPECT_DOUBLE_EQ(norm, 5.0);
  clip_to_norm({gradient}, norm, 10.0);
  EXPECT_DOUBLE_EQ(gradient[0].item<double>(), 3.0);
  clip_to_norm({gradient}, norm, 1.0);
  EXPECT_NEAR(gradient.norm().item<double>(), 1.0 * 5.0 / (5.0 + 1e-6), 1e-12);
}

class ReferenceEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plan_.batch = {8, 2, 4, 1, {}};
    plan_.optimizer.kind = OptimizerKind::sgd;
    plan_.optimizer.lr = 0.1;
    model_ = build_model(model_spec_, at::kDouble, at::kCPU);
  }
  Batch micro_batch(int64_t m) {
    return SampleSource(data_).samples(2 * m, 2 * m + 2, at::kDouble, at::kCPU);
  }

  ModelSpec model_spec_{"mlp", MlpOptions{{16, 8, 4}, Activation::relu}, 5};
  DataSpec data_{"classification", ClassificationData{16, 4}, 6};
  Plan plan_;
  std::shared_ptr<ZooModel> model_;
};

TEST_F(ReferenceEngineTest, StepsTheOptimizerOnlyAtEveryGasthStepCall) {
  ReferenceEngine engine(model_, plan_);
  int optimizer_steps = 0;
  engine.on_optimizer_step = [&](const OptimizerStepEvent&) { ++optimizer_steps; };
  for (int64_t m = 0; m < 8; ++m) {
    EXPECT_EQ(engine.is_gradient_accumulation_boundary(), m % 4 == 3) << "micro-step " << m;
    engine.backward(model_->loss_sum(micro_batch(m)) / 2.0);
    engine.step();
  }
  EXPECT_EQ(optimizer_steps, 2);
  EXPECT_EQ(engine.counters().micro_steps, 8);
  EXPECT_EQ(engine.counters().global_steps, 2);
  for (const at::Tensor& parameter : engine.parameters()) EXPECT_FALSE(parameter.grad().defined());
}

TEST_F(ReferenceEngineTest, AccumulatedGradientIsTheMeanOfMicroBatchGradients) {
  ReferenceEngine engine(model_, plan_);
  std::vector<at::Tensor> accumulated;
  engine.on_optimizer_step = [&](const OptimizerStepEvent& event) {
    accumulated = event.gradients;
  };
  for (int64_t m = 0; m < 4; ++m) {
    engine.backward(model_->loss_sum(micro_batch(m)) / 2.0);
    engine.step();
  }
  // The same four micro-batches as one batch of 8, on a fresh model with the same weights.
  auto fresh = build_model(model_spec_, at::kDouble, at::kCPU);
  (fresh->loss_sum(SampleSource(data_).samples(0, 8, at::kDouble, at::kCPU)) / 8.0).backward();
  const auto fresh_parameters = fresh->parameters();
  ASSERT_EQ(accumulated.size(), fresh_parameters.size());
  for (size_t i = 0; i < accumulated.size(); ++i) {
    EXPECT_LT((accumulated[i] - fresh_parameters[i].grad()).abs().max().item<double>(), 1e-14);
  }
}

}  // namespace
}  // namespace trainrepro
