// Mixed precision as DeepSpeed 0.19.8 (and 0.16.9 where they differ) configures and runs it:
// the loss scalers' sequences, the fp16/bf16/data_types keys, the optimizer wrapper each
// dtype mix gets, and the engine's fp16/bf16 step on real tensors.
#include <gtest/gtest.h>

#include <vector>

#include "harness/engine/loss_scaler.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/plan.h"
#include "harness/json/scenario_error.h"
#include "scenario_file_fixture.h"

namespace trainrepro {
namespace {

Plan fp16_plan(LossScalerKind kind, int64_t hysteresis, bool consecutive = false) {
  Plan plan;
  plan.precision = Precision::fp16;
  plan.mixed.scaler = kind;
  plan.mixed.fp16.initial_scale_power = 4;  // 16
  plan.mixed.fp16.loss_scale_window = 3;
  plan.mixed.fp16.hysteresis = hysteresis;
  plan.mixed.fp16.consecutive_hysteresis = consecutive;
  plan.mixed.fp16.min_loss_scale = 1.0;
  return plan;
}

// The overflow pattern and the scales after each update were produced by DeepSpeed 0.19.8
// itself: FP16_Optimizer._update_scale (stage 0) and DynamicLossScaler.update_scale (ZeRO),
// with initial scale 16, window 3, min 1.
const std::vector<bool> kOverflows = {1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0};

std::vector<double> scales_after(LossScaler scaler) {
  std::vector<double> scales;
  for (bool overflow : kOverflows) {
    scaler.update(overflow);
    scales.push_back(scaler.scale());
  }
  return scales;
}

TEST(LossScaler, StageZeroHalvesAtOnceIgnoringHysteresis) {
  EXPECT_EQ(scales_after(LossScaler(fp16_plan(LossScalerKind::fp16_optimizer, 2))),
            (std::vector<double>{8, 4, 4, 4, 4, 8, 4, 4, 4, 4, 8, 8, 8, 16, 8, 4, 2, 2, 2}));
}

TEST(LossScaler, ZeroSpendsHysteresisBeforeHalving) {
  const std::vector<double> expected = {16, 8,  8,  8,  8,  16, 16, 16, 16, 16,
                                        32, 32, 32, 64, 64, 32, 16, 16, 16};
  EXPECT_EQ(scales_after(LossScaler(fp16_plan(LossScalerKind::zero_dynamic, 2))), expected);
  EXPECT_EQ(scales_after(LossScaler(fp16_plan(LossScalerKind::zero_dynamic, 2, true))), expected);
  // hysteresis 1 behaves as stage 0's scaler.
  EXPECT_EQ(scales_after(LossScaler(fp16_plan(LossScalerKind::zero_dynamic, 1))),
            scales_after(LossScaler(fp16_plan(LossScalerKind::fp16_optimizer, 2))));
}

TEST(LossScaler, AtTheMinimumZeroRaisesAndStageZeroKeepsSkipping) {
  Plan zero = fp16_plan(LossScalerKind::zero_dynamic, 1);
  zero.mixed.fp16.initial_scale_power = 1;  // 2
  LossScaler raising(zero);
  EXPECT_NE(raising.update(true).find("reducing to 1"), std::string::npos);
  EXPECT_THROW(raising.update(true), LossScaleAtMinimum);

  Plan stage0 = zero;
  stage0.mixed.scaler = LossScalerKind::fp16_optimizer;
  LossScaler floor(stage0);
  for (int i = 0; i < 5; ++i) floor.update(true);
  EXPECT_EQ(floor.scale(), 1.0);
}

TEST(LossScaler, StaticScaleNeverMovesAndBf16HasNone) {
  Plan fixed = fp16_plan(LossScalerKind::fp16_optimizer, 2);
  fixed.mixed.fp16.loss_scale = 1024.0;
  LossScaler scaler(fixed);
  for (bool overflow : kOverflows) scaler.update(overflow);
  EXPECT_EQ(scaler.scale(), 1024.0);

  Plan bf16;
  bf16.precision = Precision::bf16;
  LossScaler none(bf16);
  EXPECT_FALSE(none.scales());
  EXPECT_EQ(none.scale(), 1.0);
  EXPECT_NE(none.update(true).find("OVERFLOW"), std::string::npos);
}

class PrecisionConfig : public ScenarioFileTest {
 protected:
  PlanResolution plan_of(const nlohmann::json& deepspeed_changes, int64_t stage = 0,
                         const std::string& version = "0.19.8") {
    nlohmann::json scenario = valid_scenario();
    scenario["deepspeed"].merge_patch(deepspeed_changes);
    scenario["deepspeed"]["zero_optimization"] = {{"stage", stage}};
    scenario["deepspeed_version"] = version;
    return resolve_plan(load_scenario(write("s.json", scenario.dump())), Device::cpu);
  }
  static std::string refusal(const PlanResolution& resolution) {
    const auto* error = std::get_if<ConfigError>(&resolution);
    return error ? error->message : "";
  }
};

TEST_F(PrecisionConfig, Fp16KeysAreReadWithDeepSpeedsDefaults) {
  const Plan defaults = std::get<Plan>(plan_of({{"fp16", {{"enabled", true}}}}));
  EXPECT_EQ(defaults.precision, Precision::fp16);
  EXPECT_EQ(defaults.mixed.fp16.initial_scale_power, 16);
  EXPECT_EQ(defaults.mixed.fp16.loss_scale_window, 1000);
  EXPECT_EQ(defaults.mixed.fp16.hysteresis, 2);
  EXPECT_EQ(defaults.mixed.fp16.min_loss_scale, 1.0);
  EXPECT_EQ(defaults.mixed.scaler, LossScalerKind::fp16_optimizer);
  const Plan zero = std::get<Plan>(plan_of(
      {{"fp16", {{"enabled", true}, {"initial_scale_power", 12}, {"hysteresis", 4}}}}, 2));
  EXPECT_EQ(zero.mixed.fp16.initial_scale_power, 12);
  EXPECT_EQ(zero.mixed.fp16.hysteresis, 4);
  EXPECT_EQ(zero.mixed.scaler, LossScalerKind::zero_dynamic);
}

TEST_F(PrecisionConfig, Fp16ValidatorsRefuseAsDeepSpeedDoes) {
  EXPECT_EQ(refusal(plan_of({{"fp16", {{"enabled", true}, {"loss_scale", -1}}}})),
            "fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)");
  EXPECT_EQ(refusal(plan_of({{"fp16", {{"enabled", true}, {"loss_scale_window", 0}}}})),
            "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled "
            "(loss_scale=0)");
  EXPECT_EQ(refusal(plan_of({{"fp16", {{"enabled", true}, {"min_loss_scale", 0}}}})),
            "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)");
  // Validated only for dynamic scaling, so a static scale with unused values is accepted.
  EXPECT_EQ(refusal(plan_of({{"fp16", {{"enabled", true}, {"loss_scale", 128},
                                       {"loss_scale_window", 0}}}})),
            "");
  EXPECT_THROW(plan_of({{"fp16", {{"enabled", true}, {"hysteresis", "two"}}}}), ScenarioError);
}

TEST_F(PrecisionConfig, GradAccumDtypeFollowsEachReleasesWrapperRules) {
  const nlohmann::json bf16 = {{"bf16", {{"enabled", true}}}};
  nlohmann::json bf16_fp32 = bf16;
  bf16_fp32["data_types"] = {{"grad_accum_dtype", "fp32"}};
  nlohmann::json bf16_bf16 = bf16;
  bf16_bf16["data_types"] = {{"grad_accum_dtype", "bfloat16"}};
  // 0.19.8: bf16 accumulates in bf16 without ZeRO and refuses fp32 there.
  EXPECT_FALSE(std::get<Plan>(plan_of(bf16)).mixed.accumulate_in_fp32);
  EXPECT_EQ(refusal(plan_of(bf16_fp32)),
            "NotImplementedError: unsupported mix of model_dtype=torch.bfloat16 and "
            "grad_accum_dtype=torch.float32");
  EXPECT_TRUE(std::get<Plan>(plan_of(bf16_fp32, 1)).mixed.accumulate_in_fp32);  // BF16_Optimizer
  // 0.16.9: fp32 by default without ZeRO, and bf16 accumulation refused there.
  EXPECT_TRUE(std::get<Plan>(plan_of(bf16, 0, "0.16.9")).mixed.accumulate_in_fp32);
  EXPECT_EQ(refusal(plan_of(bf16_bf16, 0, "0.16.9")),
            "NotImplementedError: Bfloat16 wrapper must use a gradient accumulation type of "
            "fp32, enable ZeRO to use Bfloat16 gradient accumulation");
  EXPECT_FALSE(std::get<Plan>(plan_of(bf16, 2, "0.16.9")).mixed.accumulate_in_fp32);
  nlohmann::json typo = bf16;
  typo["data_types"] = {{"grad_accum_dtype", "f32"}};
  EXPECT_THROW(plan_of(typo), ScenarioError);
}

TEST_F(PrecisionConfig, Bf16CheckGradOverflowDecidesZeroSkipsOnly) {
  nlohmann::json unchecked = {{"bf16", {{"enabled", true}, {"check_grad_overflow", false}}}};
  EXPECT_FALSE(std::get<Plan>(plan_of(unchecked, 2)).mixed.check_overflow);
  // Without ZeRO, FP16_Optimizer (in bf16) checks regardless.
  EXPECT_TRUE(std::get<Plan>(plan_of(unchecked, 0)).mixed.check_overflow);
}

}  // namespace
}  // namespace trainrepro
