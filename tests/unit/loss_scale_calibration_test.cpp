// fp16 loss-scale calibration: the windows DeepSpeed skips while its dynamic scale comes down are
// DeepSpeed working, judged against a golden that skips the same windows; skips that are not
// calibration (static scale, pinned at min_loss_scale, after the scale settled, bf16) still fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/golden/golden_run.h"
#include "harness/golden/golden_store.h"
#include "harness/pipeline/calibration_probe.h"
#include "harness/pipeline/run_scenario.h"
#include "harness/scenario/load_scenario.h"
#include "harness/verdict/loss_scale_calibration.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

Plan dynamic_fp16_plan(int64_t loss_scale_window = 1000) {
  Plan plan;
  plan.precision = Precision::fp16;
  plan.mixed.fp16.initial_scale_power = 8;
  plan.mixed.fp16.loss_scale_window = loss_scale_window;
  plan.mixed.fp16.min_loss_scale = 1.0;
  return plan;
}

// A trace of optimizer steps: each (skipped, scale the window carried).
Trace trace_of(const std::vector<std::pair<bool, double>>& steps) {
  Trace trace;
  for (const auto& [skipped, scale] : steps) {
    OptimizerStepRecord record;
    record.skipped = skipped;
    record.loss_scale = scale;
    trace.steps.push_back(record);
  }
  return trace;
}

TEST(ReadSkips, SkipsWhileTheScaleComesDownAreCalibration) {
  const Trace trace = trace_of({{true, 256}, {true, 128}, {false, 64}, {false, 64}});
  const SkipReading reading = read_skips(dynamic_fp16_plan(), trace, 4);
  EXPECT_FALSE(reading.first_failure);
  EXPECT_EQ(reading.calibration_skips, 2);
  EXPECT_EQ(reading.applied_steps, 2);
}

TEST(ReadSkips, HysteresisRepeatsAScaleThatNeverApplied) {
  // DynamicLossScaler with hysteresis 2: the first overflow keeps the scale.
  const Trace trace = trace_of({{true, 256}, {true, 256}, {false, 128}});
  EXPECT_FALSE(read_skips(dynamic_fp16_plan(), trace, 3).first_failure);
}

TEST(ReadSkips, LaterWindowsTakingTheScaleLowerAreCalibrationUntilItSettles) {
  // A window with larger gradients overflows at a level earlier windows applied at: within
  // loss_scale_window clean windows the scale has not settled.
  const Trace trace = trace_of(
      {{true, 256}, {false, 128}, {false, 128}, {true, 128}, {false, 64}, {true, 64}, {false, 32}});
  const SkipReading reading = read_skips(dynamic_fp16_plan(3), trace, 7);
  EXPECT_FALSE(reading.first_failure);
  EXPECT_EQ(reading.calibration_skips, 3);
  EXPECT_EQ(reading.applied_steps, 4);
}

TEST(ReadSkips, ADoubledScaleThatOverflowsIsAProbe) {
  // After loss_scale_window clean steps the scale doubles; its overflow halves it back.
  const Trace trace = trace_of({{false, 64}, {false, 64}, {true, 128}, {false, 64}});
  const SkipReading reading = read_skips(dynamic_fp16_plan(2), trace, 4);
  EXPECT_FALSE(reading.first_failure);
  EXPECT_EQ(reading.calibration_skips, 1);
}

TEST(ReadSkips, AnOverflowAtASettledScaleIsNotCalibration) {
  const Trace trace =
      trace_of({{true, 256}, {false, 128}, {false, 128}, {true, 256}, {false, 128}, {true, 128}});
  const SkipReading reading = read_skips(dynamic_fp16_plan(2), trace, 6);
  ASSERT_TRUE(reading.first_failure);
  EXPECT_EQ(reading.first_failure->step, 5);
  EXPECT_EQ(reading.first_failure->cause, SkipCause::after_settling);
  EXPECT_EQ(reading.first_failure->settled_step, 2);
  EXPECT_EQ(reading.first_failure->settled_scale, 128);
  EXPECT_EQ(reading.calibration_skips, 2);
}

TEST(ReadSkips, AnOverflowBelowASettledScaleIsNotCalibration) {
  const Trace trace = trace_of({{false, 128}, {false, 128}, {true, 64}});
  EXPECT_EQ(read_skips(dynamic_fp16_plan(2), trace, 3).first_failure->cause,
            SkipCause::after_settling);
}

TEST(ReadSkips, PinnedAtTheMinimumIsNotCalibration) {
  const Trace trace = trace_of({{true, 2}, {true, 1}, {true, 1}});
  const SkipReading reading = read_skips(dynamic_fp16_plan(), trace, 3);
  ASSERT_TRUE(reading.first_failure);
  EXPECT_EQ(reading.first_failure->step, 1);
  EXPECT_EQ(reading.first_failure->cause, SkipCause::at_minimum_scale);
}

TEST(ReadSkips, StaticScaleAndBf16HaveNothingToCalibrate) {
  Plan fixed = dynamic_fp16_plan();
  fixed.mixed.fp16.loss_scale = 1024;
  const Trace trace = trace_of({{true, 1024}, {false, 1024}});
  EXPECT_EQ(read_skips(fixed, trace, 2).first_failure->cause, SkipCause::static_scale);
  Plan bf16;
  bf16.precision = Precision::bf16;
  EXPECT_EQ(read_skips(bf16, trace_of({{true, 1}}), 1).first_failure->cause,
            SkipCause::no_loss_scale);
}

class Calibration : public ScenarioFileTest {
 protected:
  // A large initial scale at ZeRO stage 1 (DynamicLossScaler, hysteresis 2): the first windows
  // overflow while 2^power comes down. (Stage 1: at stage 0 FP16_Optimizer's step at
  // initialization would shift AdamW's updates, a finding of its own. GAS 1: an fp16 sum over
  // micro-steps rounds where the twin does not, low_precision_accumulation's business, not this
  // test's.)
  nlohmann::json fp16_scenario(int64_t power, int64_t steps) {
    nlohmann::json scenario = valid_scenario();
    scenario["deepspeed"]["train_micro_batch_size_per_gpu"] = 32;
    scenario["deepspeed"]["fp16"] = {{"enabled", true}, {"initial_scale_power", power}};
    scenario["deepspeed"]["zero_optimization"] = {{"stage", 1}};
    scenario["golden"]["steps"] = steps;
    return scenario;
  }
  ScenarioResult run(const nlohmann::json& json) {
    const Scenario scenario = load_scenario(write("scenario.json", json.dump()));
    const std::string golden_dir = (directory_ / "golden").string();
    write_golden(golden_dir, compute_golden(scenario));
    RunOptions options;
    options.golden_dir = golden_dir;
    return run_loaded_scenario(scenario, options);
  }
};

TEST_F(Calibration, CalibrationSkipsPassAgainstAGoldenThatSkipsTheSameWindows) {
  const ScenarioResult result = run(fp16_scenario(24, 14));
  ASSERT_EQ(result.verdict.outcome, Outcome::passed) << result.verdict.found << "\n"
                                                     << result.verdict.diagnosis;
  ASSERT_TRUE(result.training);
  EXPECT_GT(result.training->calibration_skips, 0);
  EXPECT_EQ(result.training->calibration_skips + result.training->applied_steps, 14);
  EXPECT_NE(result.verdict.found.find("calibration skipped"), std::string::npos)
      << result.verdict.found;
}

TEST_F(Calibration, TheProbePredictsTheSkipsTheRunMakes) {
  const nlohmann::json json = fp16_scenario(24, 14);
  const Scenario scenario = load_scenario(write("scenario.json", json.dump()));
  const Plan plan = std::get<Plan>(resolve_plan(scenario, Device::cpu));
  const std::optional<int64_t> predicted =
      predict_calibration_skips(scenario, plan, calibration_probe_limit(plan));
  ASSERT_TRUE(predicted);
  const ScenarioResult result = run(json);
  ASSERT_TRUE(result.training);
  EXPECT_EQ(*predicted, result.training->calibration_skips);
}

TEST_F(Calibration, ARunTooShortToApplyAnUpdateIsNotJudged) {
  const ScenarioResult result = run(fp16_scenario(32, 3));
  EXPECT_EQ(result.verdict.outcome, Outcome::error);
  EXPECT_EQ(exit_code_of(result.verdict), kExitBadInput);
  EXPECT_NE(result.verdict.found.find("not judged: all 3 compared optimizer steps were skipped"),
            std::string::npos)
      << result.verdict.found;
  EXPECT_NE(result.verdict.found.find("golden.steps (and loop.steps) to at least"),
            std::string::npos);
}

// The advice works: a rerun at the golden.steps it names compares an applied update, whether
// the loop ran on past the compared steps (memory judged: the first update is read from the
// trace) or stopped there (memory opted out: it is predicted from the golden's gradients).
TEST_F(Calibration, TheStepsATooShortRunAsksForCompareAnAppliedUpdate) {
  for (const bool judge_memory : {true, false}) {
    nlohmann::json json = fp16_scenario(32, 3);
    if (!judge_memory) json["memory"] = {{"judge", false}, {"reason", "the test's loop stops"}};
    const ScenarioResult short_run = run(json);
    const std::string advice = "golden.steps (and loop.steps) to at least ";
    const size_t at = short_run.verdict.found.find(advice);
    ASSERT_NE(at, std::string::npos) << short_run.verdict.found;
    json["golden"]["steps"] = std::stoll(short_run.verdict.found.substr(at + advice.size()));
    const ScenarioResult rerun = run(json);
    ASSERT_EQ(rerun.verdict.outcome, Outcome::passed)
        << "memory judged: " << judge_memory << ", " << json["golden"]["steps"]
        << " steps: " << rerun.verdict.found;
    ASSERT_TRUE(rerun.training);
    EXPECT_GE(rerun.training->applied_steps, 1);
  }
}

}  // namespace
}  // namespace trainrepro
