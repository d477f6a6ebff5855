// ZeRO's layout and the paper's formulas, and the stages on one rank: partitioning must not
// change the arithmetic, and stage 3 must gather parameters for a unit's forward and backward
// and release them afterwards, on both models.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "harness/engine/model_states.h"
#include "harness/engine/reference_engine.h"
#include "harness/engine/zero_layout.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

TEST(ZeroLayout, PadsTheFlatBufferToAMultipleOfTheWorldSize) {
  EXPECT_EQ(padded_to_world(614, 4), 616);
  EXPECT_EQ(padded_to_world(614, 2), 614);
  EXPECT_EQ(padded_to_world(1, 4), 4);
  const FlatLayout layout =
      flat_layout({at::zeros({3, 5}), at::zeros({5}), at::zeros({2, 3})}, /*world_size=*/4);
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{0, 15, 20}));
  EXPECT_EQ(layout.numel, 26);
  EXPECT_EQ(layout.padded_numel, 28);
  EXPECT_EQ(layout.shard_numel, 7);
  EXPECT_EQ(layout.shard_offset(3), 21);
  const at::Tensor flat = flatten_padded({at::ones({3, 5}), at::Tensor(), at::full({2, 3}, 2.0)},
                                         layout, at::TensorOptions().dtype(at::kFloat));
  EXPECT_EQ(flat.sum().item<float>(), 15.0f + 12.0f);  // the missing gradient and padding are 0
  EXPECT_EQ(flat[27].item<float>(), 0.0f);
}

TEST(ZeroFormulas, ModelStatesPerRankFollowThePaper) {
  const BytesPerParameter fp32_adam{4, 4, 8};
  const auto check = [&](int64_t stage, int64_t p, int64_t g, int64_t k) {
    const ModelStateBytes bytes = expected_model_states(stage, 4, 1000, fp32_adam);
    EXPECT_EQ(bytes.parameters, p) << "stage " << stage;
    EXPECT_EQ(bytes.gradients, g) << "stage " << stage;
    EXPECT_EQ(bytes.optimizer_states, k) << "stage " << stage;
  };
  check(0, 4000, 4000, 8000);  // P + G + K
  check(1, 4000, 4000, 2000);  // P + G + K/N
  check(2, 4000, 1000, 2000);  // P + (G + K)/N
  check(3, 1000, 1000, 2000);  // (P + G + K)/N
}

TEST(ZeroFormulas, TrafficPerStepIsTwiceTheModelAndOneAndAHalfTimesThatAtStageThree) {
  // Ψ = 4000 bytes on 2 ranks: a ring collective sends (N-1)/N of its buffer.
  EXPECT_EQ(expected_ring_bytes_per_step(0, 2, 1, 4000), 4000);  // 2Ψ(N-1)/N
  EXPECT_EQ(expected_ring_bytes_per_step(1, 2, 1, 4000), 4000);
  EXPECT_EQ(expected_ring_bytes_per_step(2, 2, 1, 4000), 4000);
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 1, 4000), 6000);  // 1.5x
  // GAS 4: stage 2 reduce-scatters every micro-step, stage 3 also gathers every micro-step.
  EXPECT_EQ(expected_ring_bytes_per_step(0, 2, 4, 4000), 4000);
  EXPECT_EQ(expected_ring_bytes_per_step(2, 2, 4, 4000), 10000);
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 4, 4000), 24000);
  EXPECT_EQ(expected_ring_bytes_per_step(3, 1, 4, 4000), 0);
}

// Frozen parameters (requires_grad false) are neither reduced nor gathered at stages 1-2; stage 3
// gathers them for every forward and for the backward of units whose output has history.
TEST(ZeroFormulas, FrozenParametersAreOnlyGatheredAtStageThree) {
  EXPECT_EQ(expected_ring_bytes_per_step(2, 2, 1, 4000, 0, {1000, 600}), 4000);
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 1, 4000, 0, {1000, 600}), 6800);
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 4, 4000, 0, {1000, 600}), 27200);
}

// Persistent parameters (stage3_param_persistence_threshold) are gathered once per step instead
// of for every forward and backward: Ψ = 4000 trainable bytes of which 1000 persistent, and 200
// bytes of frozen persistent ones beside them.
TEST(ZeroFormulas, PersistentParametersAreGatheredOncePerStepAtStageThree) {
  // Every micro-step: reduce-scatter 4000, gather 3000 twice; once per step: the persistent 1000.
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 1, 4000, 0, {}, 0, {1000, 0}), (4000 + 6000 + 1000) / 2);
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 4, 4000, 0, {}, 0, {1000, 0}),
            (4 * 4000 + 8 * 3000 + 1000) / 2);
  // Frozen persistent parameters are gathered after the step too.
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 1, 4000, 0, {}, 0, {1000, 200}),
            (4000 + 6000 + 1200) / 2);
  // A loop's GatheredParameters after the step partitions the persistent ones: gathered again.
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 1, 4000, 0, {}, 0, {1000, 0, 1000}),
            (4000 + 6000 + 2000) / 2);
  // All persistent: only the reduce-scatters and the one gather.
  EXPECT_EQ(expected_ring_bytes_per_step(3, 2, 4, 4000, 0, {}, 0, {4000, 0}), (4 * 4000 + 4000) / 2);
  // Stages 0-2 have no persistent parameters.
  EXPECT_EQ(expected_ring_bytes_per_step(2, 2, 4, 4000, 0, {}, 0, {}), 10000);
  // DeepSpeed's rule: at most the threshold's elements (parameter_offload.py uses <=).
  EXPECT_TRUE(persistent_at_stage_3(100000, 100000));
  EXPECT_FALSE(persistent_at_stage_3(100001, 100000));
  EXPECT_FALSE(persistent_at_stage_3(1, 0));
}

struct OneRankRun {
  std::vector<at::Tensor> parameters;
  std::vector<double> losses;
};

// `persistence`: stage 3's stage3_param_persistence_threshold; 0 (every parameter partitioned)
// unless a test asks for DeepSpeed's default, which keeps every parameter of these small models
// whole.
OneRankRun train_one_rank(const ModelSpec& model_spec, const DataSpec& data, int64_t stage,
                          bool trainer_groups = false, double weight_decay = 0.0,
                          OptimizerKind kind = OptimizerKind::adamw, int64_t persistence = 0) {
  Plan plan;
  plan.zero3_param_persistence_threshold = persistence;
  plan.optimizer.decay_skips_bias_and_norm = trainer_groups;
  plan.optimizer.weight_decay = weight_decay;
  plan.batch = {8, 2, 4, 1, {}};
  plan.dtype = EngineDtype::float64;
  plan.zero_stage = stage;
  plan.optimizer.kind = kind;
  plan.optimizer.lr = 0.01;
  plan.gradient_clipping = 0.1;
  auto model = build_model(model_spec, at::kDouble, at::kCPU);
  ReferenceEngine engine(model, plan);
  const SampleSource source(data);
  OneRankRun run;
  for (int64_t m = 0; m < 8; ++m) {
    const Batch batch = source.samples(2 * m, 2 * m + 2, at::kDouble, at::kCPU);
    const at::Tensor loss = model->loss_sum(batch) / static_cast<double>(batch.items);
    run.losses.push_back(loss.item<double>());
    engine.backward(loss);
    engine.step();
  }
  run.parameters = engine.gather_full_parameters();
  return run;
}

void expect_every_stage_matches_stage_zero(const ModelSpec& model, const DataSpec& data,
                                           bool trainer_groups = false) {
  const double weight_decay = trainer_groups ? 0.3 : 0.0;
  const OneRankRun reference = train_one_rank(model, data, 0, trainer_groups, weight_decay);
  for (int64_t stage = 1; stage <= 3; ++stage) {
    // Stage 3 twice: every parameter partitioned, and at DeepSpeed's default threshold.
    OneRankRun run = train_one_rank(model, data, stage, trainer_groups, weight_decay);
    if (stage == 3) {
      const OneRankRun persistent = train_one_rank(model, data, stage, trainer_groups,
                                                   weight_decay, OptimizerKind::adamw, 100000);
      for (size_t i = 0; i < run.parameters.size(); ++i) {
        EXPECT_LT((persistent.parameters[i] - run.parameters[i]).abs().max().item<double>(),
                  1e-12)
            << "persistent, parameter " << i;
      }
    }
    // The clipping norm sums in another order over a flat buffer: equal to rounding.
    for (size_t m = 0; m < run.losses.size(); ++m) {
      EXPECT_NEAR(run.losses[m], reference.losses[m], 1e-12)
          << "stage " << stage << ", micro " << m;
    }
    ASSERT_EQ(run.parameters.size(), reference.parameters.size());
    for (size_t i = 0; i < run.parameters.size(); ++i) {
      // Rounding in the clipping norm's order, which Adam amplifies where a gradient is near
      // zero: 7.6e-14 measured on one CPU (AVX-512), under 1e-14 on another.
      EXPECT_LT((run.parameters[i] - reference.parameters[i]).abs().max().item<double>(), 1e-12)
          << "stage " << stage << ", parameter " << i;
    }
  }
}

TEST(ZeroStagesOnOneRank, MlpTrainsExactlyAsWithoutZero) {
  expect_every_stage_matches_stage_zero({"mlp", MlpOptions{{7, 9, 3}, Activation::gelu}, 3},
                                        {"classification", ClassificationData{7, 3}, 4});
}

// The GPT's layer norms save their weight itself for backward, so a stage 3 gate that did not
// gather again before the unit's backward would fail here.
TEST(ZeroStagesOnOneRank, GptTrainsExactlyAsWithoutZero) {
  expect_every_stage_matches_stage_zero({"gpt", GptOptions{16, 8, 8, 2, 1}, 5},
                                        {"token_sequences", TokenSequenceData{16, 2, 8}, 6});
}

// A user's requires_grad_(False) (PEFT, frozen embeddings): the trainable parameters train the
// same at every stage, and the frozen ones (not in the engine's list) never move.
TEST(ZeroStagesOnOneRank, FrozenParametersStayAsBuiltAtEveryStage) {
  ModelSpec mlp{{"mlp", MlpOptions{{7, 9, 9, 3}, Activation::gelu}, 3}};
  mlp.frozen = {"layers.1"};
  ModelSpec gpt{{"gpt", GptOptions{16, 8, 8, 2, 2}, 5}};
  gpt.frozen = {"token_embedding", "position_embedding", "blocks.1.ln2"};
  const DataSpec features{"classification", ClassificationData{7, 3}, 4};
  const DataSpec tokens{"token_sequences", TokenSequenceData{16, 2, 8}, 6};
  expect_every_stage_matches_stage_zero(mlp, features);
  expect_every_stage_matches_stage_zero(gpt, tokens);
  for (int64_t stage = 0; stage <= 3; ++stage) {
    Plan plan;
    plan.batch = {4, 2, 2, 1, {}};
    plan.dtype = EngineDtype::float64;
    plan.zero_stage = stage;
    plan.optimizer.kind = OptimizerKind::adamw;
    plan.optimizer.weight_decay = 0.1;  // would move a frozen weight handed to the optimizer
    auto model = build_model(gpt, at::kDouble, at::kCPU);
    const auto built = build_model(gpt, at::kDouble, at::kCPU)->frozen_parameters();
    ReferenceEngine engine(model, plan);
    EXPECT_EQ(engine.parameter_names().front(), "blocks.0.ln1.weight") << "stage " << stage;
    const SampleSource source(tokens);
    for (int64_t m = 0; m < 4; ++m) {
      const Batch batch = source.samples(2 * m, 2 * m + 2, at::kDouble, at::kCPU);
      engine.backward(model->loss_sum(batch) / static_cast<double>(batch.items));
      engine.step();
    }
    (void)engine.gather_full_parameters();
    const std::vector<at::Tensor> frozen = model->frozen_parameters();
    ASSERT_EQ(frozen.size(), 4u);  // two embeddings, blocks.1.ln2's weight and bias
    for (size_t i = 0; i < frozen.size(); ++i) {
      if (stage == 3) continue;  // released between units: compared through a forward below
      EXPECT_TRUE(frozen[i].equal(built[i])) << "stage " << stage << ", frozen " << i;
    }
  }
}

// The Hugging Face Trainer's two AdamW groups (no decay for biases and LayerNorm parameters):
// stages 1-2 hold one flat buffer per group, and every stage trains as stage 0 does.
TEST(ZeroStagesOnOneRank, TrainerParameterGroupsTrainAlikeAtEveryStage) {
  const ModelSpec gpt{{"gpt", GptOptions{16, 8, 8, 2, 1}, 5}};
  const DataSpec tokens{"token_sequences", TokenSequenceData{16, 2, 8}, 6};
  expect_every_stage_matches_stage_zero(gpt, tokens, /*trainer_groups=*/true);
  // The groups matter: decaying everything gives other weights.
  const OneRankRun grouped = train_one_rank(gpt, tokens, 2, /*trainer_groups=*/true, 0.3);
  Plan plan;
  plan.batch = {8, 2, 4, 1, {}};
  plan.dtype = EngineDtype::float64;
  plan.zero_stage = 2;
  plan.optimizer.kind = OptimizerKind::adamw;
  plan.optimizer.decay_skips_bias_and_norm = true;
  auto model = build_model(gpt, at::kDouble, at::kCPU);
  ReferenceEngine engine(model, plan);
  // token_embedding, position_embedding, ln1 (2), attn_qkv (2), …: biases and norms in group 1.
  const std::vector<int64_t> expected_groups{0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1};
  EXPECT_EQ(engine.parameter_groups(), expected_groups);
  EXPECT_EQ(engine.parameter_names()[16], "head.weight");
  const OneRankRun decay_all = train_one_rank(gpt, tokens, 2, /*trainer_groups=*/false, 0.3);
  // ln1.weight: decayed only without the groups.
  EXPECT_GT((grouped.parameters[2] - decay_all.parameters[2]).abs().max().item<double>(), 1e-4);
}

// DeepSpeed's stage 3 hands the optimizer the rank's shards side by side, one flat tensor per
// param group (stage3.py _optimizer_step), as stages 1-2 hand it their flat partition: on one
// rank Lamb's trust ratio then spans the whole model at both, and differs from stage 0's.
TEST(ZeroStagesOnOneRank, LambSeesOneFlatPartitionAtStagesOneToThree) {
  const ModelSpec mlp{{"mlp", MlpOptions{{7, 9, 3}, Activation::gelu}, 3}};
  const DataSpec features{"classification", ClassificationData{7, 3}, 4};
  const auto lamb = [&](int64_t stage) {
    return train_one_rank(mlp, features, stage, false, 0.01, OptimizerKind::lamb).parameters;
  };
  const std::vector<at::Tensor> layer_wise = lamb(0), flat2 = lamb(2), flat3 = lamb(3);
  for (size_t i = 0; i < flat2.size(); ++i) {
    EXPECT_LT((flat3[i] - flat2[i]).abs().max().item<double>(), 1e-12) << "parameter " << i;
  }
  EXPECT_GT((flat3[0] - layer_wise[0]).abs().max().item<double>(), 1e-6);
}

// DeepSpeed releases each module once its backward is done; so must stage 3 here. When the first
// layer's weight gradient arrives (the end of backward), the later layers must hold nothing.
TEST(ZeroStageThree, ReleasesEachLayerOnceItsBackwardIsDone) {
  Plan plan;
  plan.batch = {4, 4, 1, 1, {}};
  plan.dtype = EngineDtype::float64;
  plan.zero_stage = 3;
  plan.zero3_param_persistence_threshold = 0;  // every parameter partitioned
  plan.optimizer.kind = OptimizerKind::sgd;
  auto model =
      build_model({"mlp", MlpOptions{{8, 8, 8, 8}, Activation::tanh}, 7}, at::kDouble, at::kCPU);
  ReferenceEngine engine(model, plan);
  std::vector<int64_t> later_layer_sizes;
  at::Tensor first_weight = engine.parameters()[0];  // layers.0.weight
  first_weight.register_hook([&](const at::Tensor&) {
    for (size_t i = 2; i < engine.parameters().size(); ++i) {
      later_layer_sizes.push_back(engine.parameters()[i].numel());
    }
  });
  const Batch batch = SampleSource({"classification", ClassificationData{8, 8}, 8})
                          .samples(0, 4, at::kDouble, at::kCPU);
  engine.backward(model->loss_sum(batch) / 4.0);
  engine.step();
  EXPECT_EQ(later_layer_sizes, std::vector<int64_t>(4, 0)) << "layers 1 and 2 still gathered";
}

// DeepSpeed keeps a parameter of at most stage3_param_persistence_threshold elements whole on every
// rank: the gate never releases it, and after the step it is whole again (gathered from the
// updated shards); the larger ones are released. Measured with DeepSpeed 0.19.8 (2 ranks, a
// 32-128-128-8 MLP, threshold 1000): the weights' p.data empty after the step, the biases whole.
TEST(ZeroStageThree, KeepsPersistentParametersWholeAndReleasesTheRest) {
  Plan plan;
  plan.batch = {4, 4, 1, 1, {}};
  plan.dtype = EngineDtype::float64;
  plan.zero_stage = 3;
  plan.zero3_param_persistence_threshold = 8;  // the biases (8), not the weights (64)
  plan.optimizer.kind = OptimizerKind::sgd;
  plan.optimizer.lr = 0.1;
  auto model =
      build_model({"mlp", MlpOptions{{8, 8, 8, 8}, Activation::tanh}, 7}, at::kDouble, at::kCPU);
  ReferenceEngine engine(model, plan);
  const Batch batch = SampleSource({"classification", ClassificationData{8, 8}, 8})
                          .samples(0, 4, at::kDouble, at::kCPU);
  engine.backward(model->loss_sum(batch) / 4.0);
  const at::Tensor bias_before = engine.parameters()[1].clone();
  engine.step();
  std::vector<int64_t> sizes;
  for (const at::Tensor& parameter : engine.parameters()) sizes.push_back(parameter.numel());
  EXPECT_EQ(sizes, (std::vector<int64_t>{0, 8, 0, 8, 0, 8}));
  // Whole again with the step's update, and handed out as itself.
  EXPECT_FALSE(engine.parameters()[1].equal(bias_before));
  const std::vector<at::Tensor> gathered = engine.gather_full_parameters();
  EXPECT_TRUE(gathered[1].is_alias_of(engine.parameters()[1]));
  EXPECT_FALSE(gathered[0].is_alias_of(engine.parameters()[0]));
  EXPECT_EQ(gathered[0].numel(), 64);
  // The loop's GatheredParameters hands out the same, and leaving it releases them all: the
  // loop then holds the only reference to the persistent biases' whole storage.
  const std::vector<at::Tensor> kept = engine.gather_parameters_as_the_loop_does();
  EXPECT_EQ(kept[1].numel(), 8);
  EXPECT_EQ(engine.parameters()[1].numel(), 0);
}

}  // namespace
}  // namespace trainrepro
