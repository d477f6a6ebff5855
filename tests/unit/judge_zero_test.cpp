// Judging model states and traffic against the ZeRO paper: exact figures pass, a rank holding
// or sending more than the formula says fails with the numbers, and at stage 3 tensors beyond the
// model states the size of the whole model are named as gathered parameters kept alive.
#include <gtest/gtest.h>

#include <map>

#include <ATen/ATen.h>

#include "harness/verdict/judge_zero.h"

namespace trainrepro {
namespace {

constexpr int64_t kNumel = 1000;  // Ψ, a multiple of every world size used here

// What a rank holds and sends, counted by hand (not with the judge's formulas, so these tests
// can fail): Ψ = 1000 float32 elements, so P = G = 4000 B and Adam's K = 8000 B; N ranks; GAS 4;
// a ring collective sends (N-1)/N of its buffer.
struct HandCount {
  ModelStateBytes held;
  int64_t sent = 0;
};
HandCount hand_count(int64_t stage, int64_t ranks) {
  const std::map<std::pair<int64_t, int64_t>, HandCount> table = {
      {{0, 1}, {{4000, 4000, 8000}, 0}},
      {{0, 2}, {{4000, 4000, 8000}, 4000}},   // all-reduce: 2 x 4000 x 1/2
      {{1, 2}, {{4000, 4000, 4000}, 4000}},   // reduce-scatter + all-gather
      {{2, 2}, {{4000, 2000, 4000}, 10000}},  // 4 reduce-scatters + 1 all-gather: 5 x 2000
      {{3, 2}, {{2000, 2000, 4000}, 24000}},  // 4 x (2 gathers + 1 reduce-scatter) x 2000
      {{0, 4}, {{4000, 4000, 8000}, 6000}},   // 2 x 4000 x 3/4
      {{1, 4}, {{4000, 4000, 2000}, 6000}},
      {{2, 4}, {{4000, 1000, 2000}, 15000}},  // 5 x 3000
      {{3, 4}, {{1000, 1000, 2000}, 36000}},  // 12 x 3000
  };
  return table.at({stage, ranks});
}

class JudgeZero : public ::testing::Test {
 protected:
  // A float32 AdamW run at `stage` on `ranks` whose last step held and sent what it should.
  void make_run(int64_t stage, int64_t ranks) {
    plan_.zero_stage = stage;
    plan_.zero3_param_persistence_threshold = 0;  // the table partitions Ψ at stage 3
    plan_.batch = {32, 4, 4, ranks, {}};
    plan_.optimizer.kind = OptimizerKind::adamw;
    trace_.parameter_numel = kNumel;
    trace_.initial_parameters = {at::zeros({kNumel})};  // the judge pads from the shapes
    OptimizerStepRecord step;
    step.model_states = hand_count(stage, ranks).held;
    step.ring_bytes = hand_count(stage, ranks).sent;
    trace_.steps = {step, step};
    MemorySample boundary;
    boundary.point = SamplePoint::boundary;
    boundary.cpu_tensor_bytes = step.model_states.total() + 200;  // plus a batch and a loss
    trace_.memory = {boundary};
  }
  ZeroJudgement judge() { return judge_zero(scenario_, plan_, trace_); }

  Scenario scenario_;
  Plan plan_;
  Trace trace_;
};

TEST(ZeroPadding, CountedFromTheShapesByHand) {
  // The ZeRO matrix's MLP 15 -> 29 -> 5: weights 435 and 145, biases 29 and 5, 614 in all.
  const std::vector<int64_t> numels = {435, 29, 145, 5};
  EXPECT_EQ(padded_numel_from_shapes(0, 4, numels), 614);
  EXPECT_EQ(padded_numel_from_shapes(1, 4, numels), 616);  // one flat buffer: 154 x 4
  EXPECT_EQ(padded_numel_from_shapes(2, 3, numels), 615);  // 205 x 3
  EXPECT_EQ(padded_numel_from_shapes(3, 4, numels), 436 + 32 + 148 + 8);  // each parameter
  EXPECT_EQ(padded_numel_from_shapes(3, 1, numels), 614);
}

TEST_F(JudgeZero, ExactFiguresPassAtEveryStage) {
  for (int64_t stage = 0; stage <= 3; ++stage) {
    make_run(stage, 4);
    const ZeroJudgement judgement = judge();
    EXPECT_TRUE(judgement.judged);
    EXPECT_DOUBLE_EQ(judgement.model_states_ratio, 1.0) << "stage " << stage;
    EXPECT_DOUBLE_EQ(judgement.traffic_ratio, 1.0) << "stage " << stage;
    EXPECT_TRUE(judgement.diagnoses.empty()) << "stage " << stage;
  }
}

TEST_F(JudgeZero, UnpartitionedOptimizerStateAtStageOneFails) {
  make_run(1, 4);
  trace_.steps.back().model_states.optimizer_states = 8 * kNumel;  // K, not K/N
  const ZeroJudgement judgement = judge();
  ASSERT_EQ(judgement.diagnoses.size(), 1u);
  EXPECT_EQ(judgement.diagnoses[0], DiagnosisKind::model_states_differ_from_zero);
  EXPECT_NE(judgement.explanations[0].find("ZeRO stage 1 on 4 ranks should hold"),
            std::string::npos)
      << judgement.explanations[0];
}

TEST_F(JudgeZero, ReducingAtTheBoundaryOnlyAtStageTwoIsCaughtByTraffic) {
  make_run(2, 2);
  // Stage 0/1 traffic (2Ψ) where stage 2 with GAS 4 reduce-scatters every micro-step (5Ψ).
  trace_.steps.back().ring_bytes = hand_count(1, 2).sent;
  const ZeroJudgement judgement = judge();
  ASSERT_EQ(judgement.diagnoses.size(), 1u);
  EXPECT_EQ(judgement.diagnoses[0], DiagnosisKind::traffic_differs_from_zero);
  EXPECT_NEAR(judgement.traffic_ratio, 0.4, 1e-12);
}

TEST_F(JudgeZero, TrafficIsOnlyReportedWhenTheLoopEvaluates) {
  make_run(3, 2);
  scenario_.loop.evaluation = EvaluationSpec{};
  trace_.steps.back().ring_bytes *= 2;
  const ZeroJudgement judgement = judge();
  EXPECT_FALSE(judgement.traffic_judged);
  EXPECT_TRUE(judgement.diagnoses.empty());
}

TEST_F(JudgeZero, WholeModelAliveBeyondStageThreeStatesIsGatheredParametersKept) {
  make_run(3, 2);
  trace_.steps.back().harness_tensor_bytes = 50000;  // counted apart, never in the samples
  EXPECT_TRUE(judge().diagnoses.empty());
  trace_.memory.back().cpu_tensor_bytes += 4 * kNumel;  // a full float32 copy of Ψ
  const ZeroJudgement judgement = judge();
  ASSERT_EQ(judgement.diagnoses.size(), 1u);
  EXPECT_EQ(judgement.diagnoses[0], DiagnosisKind::gathered_parameters_kept);
}

// At DeepSpeed's default stage3_param_persistence_threshold (1e5) the 1000-element parameter is
// persistent: whole on every rank beside its shard, never gathered for a forward or backward,
// gathered once after the step. By hand, 2 ranks, GAS 4: parameters 2000 + 4000, gradients 2000,
// Adam 4000; sent: 4 reduce-scatters of 4000 x 1/2 and one gather of 4000 x 1/2.
TEST_F(JudgeZero, PersistentParametersAreWholeAndGatheredOncePerStep) {
  make_run(3, 2);
  plan_.zero3_param_persistence_threshold = 100000;
  trace_.steps.back().model_states = {6000, 2000, 4000};
  trace_.steps.back().ring_bytes = 4 * 2000 + 2000;
  trace_.memory.back().cpu_tensor_bytes = 12000 + 200;
  const ZeroJudgement judgement = judge();
  EXPECT_DOUBLE_EQ(judgement.model_states_ratio, 1.0);
  EXPECT_DOUBLE_EQ(judgement.traffic_ratio, 1.0);
  EXPECT_TRUE(judgement.diagnoses.empty());
  // A loop that keeps what GatheredParameters handed it: leaving the context partitioned the
  // persistent parameter too, so the rank holds its shard states plus the kept whole copy, and
  // the next forward gathers it again.
  scenario_.loop.keep = KeepHabit::gathered_parameters;
  trace_.steps.back().ring_bytes += 2000;
  trace_.memory.back().cpu_tensor_bytes = 8000 + 4000 + 200;
  const ZeroJudgement kept = judge();
  EXPECT_DOUBLE_EQ(kept.traffic_ratio, 1.0);
  ASSERT_EQ(kept.diagnoses.size(), 1u);
  EXPECT_EQ(kept.diagnoses[0], DiagnosisKind::gathered_parameters_kept);
}

// On DeepSpeed and FSDP2 the worker's census says what lives at each boundary and what the
// engine's own objects reach at the end; a whole model beyond them after every step is gathered
// parameters kept.
TEST_F(JudgeZero, WorkerEnginesJudgeWhatLivesBeyondTheEngine) {
  make_run(3, 2);  // 8000 bytes of states, 8200 alive at the boundary
  trace_.model_states_not_measured = "the fsdp2 engine does not measure ZeRO's model states";
  trace_.engine_tensor_bytes_at_end = 8000;
  EXPECT_TRUE(judge().diagnoses.empty());
  EXPECT_FALSE(judge().judged);  // no model-state or traffic figures
  // The rule's edge, three quarters of the whole model (3000 bytes) beyond the engine, the 200
  // bytes above included: 2999 are not it.
  trace_.memory.back().cpu_tensor_bytes = 8000 + 2999;
  EXPECT_TRUE(judge().diagnoses.empty());
  trace_.memory.back().cpu_tensor_bytes = 8000 + 3000;
  EXPECT_EQ(judge().diagnoses.size(), 1u);
  trace_.memory.back().cpu_tensor_bytes = 8000 + 4000 + 200;  // the whole float32 model kept
  ASSERT_EQ(judge().diagnoses.size(), 1u);
  EXPECT_EQ(judge().diagnoses[0], DiagnosisKind::gathered_parameters_kept);
  EXPECT_NE(judge().explanations[0].find("the engine's own objects"), std::string::npos);
  trace_.engine_tensor_bytes_at_end = -1;  // a census that reached no engine
  EXPECT_TRUE(judge().diagnoses.empty());
}

// The whole model's size is the parameters as the engine hands them out, which the trace says:
// a bf16 copy (DeepSpeed under bf16) is half the float32 model, and kept is kept.
TEST_F(JudgeZero, GatheredParametersAreMeasuredInTheDtypeTheTraceSaysTheEngineHandsOut) {
  make_run(3, 2);  // 8000 bytes of states
  trace_.model_states_not_measured = "the deepspeed engine does not measure ZeRO's model states";
  trace_.engine_tensor_bytes_at_end = 8000;
  trace_.memory.back().cpu_tensor_bytes = 8000 + 1600;  // 0.8 of a bf16 model, 0.4 of float32
  EXPECT_TRUE(judge().diagnoses.empty());
  trace_.gathered_parameter_element_bytes = 2;
  ASSERT_EQ(judge().diagnoses.size(), 1u);
  EXPECT_EQ(judge().diagnoses[0], DiagnosisKind::gathered_parameters_kept);
}

// A collective's buffer that torch's gloo thread had yet to free at every boundary census (a
// loaded machine) is gone from the census at the end, taken once other threads have freed what
// they hold: not the loop's. What the loop keeps is there at the end too.
TEST_F(JudgeZero, WhatAnotherThreadHadYetToFreeAtTheBoundariesIsNotGatheredParametersKept) {
  make_run(3, 2);  // 8000 bytes of states
  trace_.model_states_not_measured = "the fsdp2 engine does not measure ZeRO's model states";
  trace_.engine_tensor_bytes_at_end = 8000;
  trace_.memory.back().cpu_tensor_bytes = 8000 + 4000;  // a whole model's gradient in flight
  trace_.live_at_end = {{8000, 0}, {200, 2}};
  EXPECT_TRUE(judge().diagnoses.empty());
  trace_.live_at_end.push_back({4000, 2});  // kept to the end: the loop's
  ASSERT_EQ(judge().diagnoses.size(), 1u);
  EXPECT_EQ(judge().diagnoses[0], DiagnosisKind::gathered_parameters_kept);
}

// A leak that outgrows the model by the end is not gathered parameters: they are there after
// every step, a leak is small after the first (an evaluation's graph kept at stage 3 did this).
TEST_F(JudgeZero, ALeakThatOutgrowsTheModelIsNotGatheredParametersKept) {
  make_run(3, 2);
  MemorySample first = trace_.memory.back();
  first.cpu_tensor_bytes += 500;  // one step's leak
  trace_.memory.back().cpu_tensor_bytes += 30 * 500;  // thirty steps' later
  trace_.memory.insert(trace_.memory.begin(), first);
  EXPECT_TRUE(judge().diagnoses.empty());
  for (MemorySample& sample : trace_.memory) sample.cpu_tensor_bytes += 4000;  // and kept
  ASSERT_EQ(judge().diagnoses.size(), 1u);
  EXPECT_EQ(judge().diagnoses[0], DiagnosisKind::gathered_parameters_kept);
}

TEST_F(JudgeZero, ALoopThatDoesNotDriveTheEngineIsNotBlamedOnTheEngine) {
  make_run(2, 2);
  trace_.steps.back().ring_bytes *= 4;  // GAS windows per boundary: four times the traffic
  scenario_.loop.stepping = SteppingHabit::once_per_window;
  const ZeroJudgement judgement = judge();
  EXPECT_TRUE(judgement.diagnoses.empty());
  EXPECT_FALSE(judgement.traffic_judged);
  EXPECT_NE(judgement.not_judged_reason.find("engine.step() once per window"), std::string::npos);
  scenario_.loop.stepping = SteppingHabit::every_micro_step;  // driven as DeepSpeed drives it
  ASSERT_EQ(judge().diagnoses.size(), 1u);
  EXPECT_EQ(judge().diagnoses[0], DiagnosisKind::traffic_differs_from_zero);
}

TEST_F(JudgeZero, OneRankWithoutZeroIsNotJudged) {
  make_run(0, 1);
  EXPECT_FALSE(judge().judged);
}

}  // namespace
}  // namespace trainrepro
