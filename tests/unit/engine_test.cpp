// The reference engine's DeepSpeed semantics (boundary, scaling, zeroing, clipping, counters)
// and its optimizers checked against LibTorch's own torch::optim implementations.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

// Lamb against a float64 transcription of DeepSpeed 0.19.8's FusedLamb CUDA kernel
// (csrc/lamb/fused_lamb_cuda_kernel.cu: moments, update = m / denom + decay * p, the tensor's
// trust ratio clamped to [min_coeff, max_coeff], 1 for a zero tensor; the bias-corrected step
// size) written in Python for this test, not from this code. Three tensors, three steps.
struct LambCase {
  const char* name;
  void (*configure)(OptimizerConfig&);
  std::vector<double> expected;  // the three tensors after the steps, flattened and joined
};

TEST(Optimizer, LambMatchesDeepSpeedsFusedLambKernel) {
  const std::vector<LambCase> cases = {
      {"defaults with weight decay",
       [](OptimizerConfig& c) {
         c.lr = 0.01;
         c.weight_decay = 0.01;
       },
       {0.48918987228741007, -1.0016968518322322, 1.9980556847926003, 0.0989152433408701,
        0.0006429828026240608, -0.3017937636846409, 0.20039176770116957, -0.010138490926734838,
        0.009902831409089362}},
      {"trust ratio clamped to max_coeff",
       [](OptimizerConfig& c) {
         c.lr = 0.1;
         c.max_coeff = 0.3;
       },
       {0.4370513883501499, -0.993452672865131, 1.9842621446847353, 0.08911872887537517,
        0.006422748386862241, -0.31804680147851444, 0.2040141686710747, -0.10486380473544941,
        0.0963227609959734}},
      {"no bias correction, eps inside the square root",
       [](OptimizerConfig& c) {
         c.lr = 0.05;
         c.weight_decay = 0.1;
         c.bias_correction = false;
         c.eps_inside_sqrt = true;
         c.eps = 1e-6;
         c.beta1 = 0.8;
         c.beta2 = 0.99;
       },
       {0.3100169321077285, -1.076039406792762, 1.952060300588265, 0.08080144290003269,
        0.00811104194093341, -0.33639773794181843, 0.21545514485127049, -0.10974916337736926,
        0.09022111660519051}},
  };
  const std::vector<std::vector<std::vector<double>>> gradients = {
      {{0.3, -0.2, 0.1}, {1.0, -2.0, 0.5, 0.25}, {0.1, -0.1}},
      {{0.1, 0.4, -0.3}, {-0.5, 1.5, 0.0, -0.75}, {0.2, 0.3}},
      {{-0.2, 0.1, 0.2}, {0.25, 0.5, 1.0, -1.0}, {-0.1, 0.05}}};
  const auto tensor = [](const std::vector<double>& values) {
    return at::tensor(values, at::kDouble);
  };
  for (const LambCase& lamb : cases) {
    OptimizerConfig config;
    config.kind = OptimizerKind::lamb;
    config.decoupled_weight_decay = false;
    lamb.configure(config);
    Optimizer optimizer(config);
    std::vector<at::Tensor> parameters = {tensor({0.5, -1.0, 2.0}),
                                          tensor({0.1, 0.0, -0.3, 0.2}).reshape({2, 2}),
                                          at::zeros({2}, at::kDouble)};
    for (const auto& step : gradients) {
      optimizer.step(parameters, {tensor(step[0]), tensor(step[1]).reshape({2, 2}), tensor(step[2])});
    }
    std::vector<double> actual;
    for (const at::Tensor& parameter : parameters) {
      const at::Tensor flat = parameter.reshape({-1}).contiguous();
      actual.insert(actual.end(), flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
    }
    ASSERT_EQ(actual.size(), lamb.expected.size()) << lamb.name;
    for (size_t i = 0; i < actual.size(); ++i) {
      EXPECT_NEAR(actual[i], lamb.expected[i], 1e-14) << lamb.name << ", element " << i;
    }
  }
}

// Parameter groups: each position its own weight decay (the Trainer's AdamW: 0 for biases).
TEST(Optimizer, WeightDecayPerPosition) {
  OptimizerConfig config;
  config.kind = OptimizerKind::adamw;
  config.lr = 0.1;
  config.weight_decay = 0.5;
  Optimizer optimizer(config);
  optimizer.set_weight_decays({0.5, 0.0});
  at::Tensor decayed = at::ones({3}, at::kDouble), kept = at::ones({2}, at::kDouble);
  optimizer.step({decayed, kept}, {at::zeros({3}, at::kDouble), at::zeros({2}, at::kDouble)});
  EXPECT_DOUBLE_EQ(decayed[0].item<double>(), 1.0 - 0.1 * 0.5);  // zero gradient: decay only
  EXPECT_DOUBLE_EQ(kept[0].item<double>(), 1.0);
}

// Param groups with their own lr: each position steps at its own rate; lr() reports the first
// group's (DeepSpeed's get_lr()[0]), and set_lr goes back to one rate for all.
TEST(Optimizer, LearningRatePerPosition) {
  OptimizerConfig config;
  config.kind = OptimizerKind::sgd;
  config.lr = 0.1;
  Optimizer optimizer(config);
  optimizer.set_lrs({0.01, 0.1}, 0.01);
  EXPECT_DOUBLE_EQ(optimizer.lr(), 0.01);
  at::Tensor slow = at::ones({3}, at::kDouble), fast = at::ones({2}, at::kDouble);
  optimizer.step({slow, fast}, {at::ones({3}, at::kDouble), at::ones({2}, at::kDouble)});
  EXPECT_DOUBLE_EQ(slow[0].item<double>(), 1.0 - 0.01);
  EXPECT_DOUBLE_EQ(fast[0].item<double>(), 1.0 - 0.1);
  optimizer.set_lr(0.5);
  optimizer.step({slow, fast}, {at::ones({3}, at::kDouble), at::ones({2}, at::kDouble)});
  EXPECT_DOUBLE_EQ(slow[0].item<double>(), 1.0 - 0.01 - 0.5);
  EXPECT_DOUBLE_EQ(fast[0].item<double>(), 1.0 - 0.1 - 0.5);
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

  ModelSpec model_spec_{{"mlp", MlpOptions{{16, 8, 4}, Activation::relu}, 5}};
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

// runtime/engine.py: once set_gradient_accumulation_boundary was called, its flag is the
// boundary whatever the micro-step counter says (the Hugging Face Trainer under accelerate
// 1.8.0+ sets it before every backward and steps once per window).
TEST_F(ReferenceEngineTest, ExplicitBoundaryOverridesTheCounter) {
  plan_.batch = {2, 2, 1, 1, {}};  // DeepSpeed's GAS 1: every micro-step would be a boundary
  ReferenceEngine engine(model_, plan_);
  int optimizer_steps = 0;
  engine.on_optimizer_step = [&](const OptimizerStepEvent&) { ++optimizer_steps; };
  for (int64_t m = 0; m < 8; ++m) {
    const bool sync = m % 4 == 3;
    engine.set_gradient_accumulation_boundary(sync);
    EXPECT_EQ(engine.is_gradient_accumulation_boundary(), sync) << "micro-step " << m;
    engine.backward(model_->loss_sum(micro_batch(m)) / 8.0, /*scale_wrt_gas=*/false);
    if (sync) engine.step();
  }
  EXPECT_EQ(optimizer_steps, 2);
  EXPECT_EQ(engine.counters().global_steps, 2);
}

// backward(loss, scale_wrt_gas=False) leaves the loss as the caller divided it: four
// micro-batches each divided by 4 by the caller give the mean of the 8 samples, with
// DeepSpeed's GAS 4 not applied a second time.
TEST_F(ReferenceEngineTest, BackwardWithoutScalingWrtGasDividesOnce) {
  ReferenceEngine engine(model_, plan_);  // GAS 4
  std::vector<at::Tensor> accumulated;
  engine.on_optimizer_step = [&](const OptimizerStepEvent& event) {
    accumulated = event.gradients;
  };
  for (int64_t m = 0; m < 4; ++m) {
    engine.backward(model_->loss_sum(micro_batch(m)) / 2.0 / 4.0, /*scale_wrt_gas=*/false);
    engine.step();
  }
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
