// Judging a training run against its golden: a correct run passes, a bug nobody predicted is
// reported as unexplained with its numbers, and an expected bug that is absent is not reproduced.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/golden/golden_run.h"
#include "harness/loop/training_loop.h"
#include "harness/scenario/load_scenario.h"
#include "harness/verdict/judge_training.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class JudgeTraining : public ScenarioFileTest {
 protected:
  void SetUp() override {
    ScenarioFileTest::SetUp();
    nlohmann::json scenario = valid_scenario();
    scenario["golden"]["steps"] = 2;
    scenario["dtype"] = "float64";
    scenario_ = load_scenario(write("scenario.json", scenario.dump()));
    plan_ = std::get<Plan>(resolve_plan(scenario_, Device::cpu));
    golden_ = compute_golden(scenario_);
    trace_ = run_training_loop(scenario_.model, scenario_.data, scenario_.loop, plan_,
                               LoopOptions{/*recorded_steps=*/2});
  }
  Scenario scenario_;
  Plan plan_;
  Golden golden_;
  Trace trace_;
  MemoryJudgement memory_;
  ZeroJudgement zero_;
};

TEST_F(JudgeTraining, CorrectAccumulationPassesAtEveryStep) {
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::passed) << verdict.found;
  ASSERT_EQ(judgement.steps.size(), 2u);
  for (const StepJudgement& step : judgement.steps) {
    EXPECT_NEAR(step.loss, step.golden_loss, 1e-12);
    for (const TensorComparison& c : step.gradients) EXPECT_LT(c.max_abs_error, 1e-12) << c.name;
  }
}

TEST_F(JudgeTraining, UnpredictedMismatchIsReportedAsUnexplainedWithNumbers) {
  for (at::Tensor& gradient : trace_.steps[0].gradients) gradient.mul_(1.7);
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::failed);
  ASSERT_TRUE(judgement.diagnosis.has_value());
  EXPECT_FALSE(judgement.diagnosis->kind.has_value());
  EXPECT_NE(verdict.diagnosis.find("no known cause explains it; tested: loss_not_scaled "
                                   "(relative error"),
            std::string::npos)
      << verdict.diagnosis;
  EXPECT_NE(verdict.found.find("norm ratio 1.7"), std::string::npos) << verdict.found;
}

TEST_F(JudgeTraining, ExpectedBugThatIsAbsentIsNotReproduced) {
  scenario_.expect = {ExpectedOutcome::diagnosis, std::nullopt, DiagnosisKind::loss_not_scaled};
  TrainingJudgement judgement;
  EXPECT_EQ(judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_).outcome,
            Outcome::not_reproduced);
}

// "reproduced_as": {"outcome": "failed"} (deepspeed_releases): any mismatch, explained or not,
// reproduces it; a clean run does not.
TEST_F(JudgeTraining, ExpectedUnnamedFailureIsReproducedByAnyMismatch) {
  scenario_.expect = {ExpectedOutcome::failure, std::nullopt, std::nullopt};
  TrainingJudgement clean;
  EXPECT_EQ(judge_run(scenario_, plan_, trace_, golden_, clean, memory_, zero_).outcome,
            Outcome::not_reproduced);
  for (at::Tensor& gradient : trace_.steps[0].gradients) gradient.mul_(1.7);
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::reproduced) << verdict.found;
  EXPECT_EQ(verdict.expected, "a mismatch with the golden (no diagnosis named)");
  EXPECT_NE(verdict.found.find("norm ratio 1.7"), std::string::npos) << verdict.found;
}

TEST_F(JudgeTraining, ParameterOnlyMismatchBlamesTheOptimizerUpdate) {
  trace_.steps[1].parameters[0].add_(1e-3);
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::failed);
  EXPECT_EQ(judgement.first_parameter_mismatch, 1);
  EXPECT_NE(verdict.diagnosis.find("the optimizer update itself differs"), std::string::npos);
}

TEST_F(JudgeTraining, NaNOnBothSidesIsNeverAPass) {
  // Both the run and the golden diverged: NaN positions compare equal, but a diverged run is
  // a failure that names the first tensor, unless the scenario expects the divergence.
  trace_.steps[1].gradients[0].fill_(std::nan(""));
  golden_.steps[1].gradients[0].fill_(std::nan(""));
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::failed) << verdict.found;
  EXPECT_NE(verdict.diagnosis.find("training diverged: at optimizer step 1 the gradient " +
                                   trace_.parameter_names[0]),
            std::string::npos)
      << verdict.diagnosis;
  scenario_.expect = {ExpectedOutcome::diagnosis, std::nullopt, DiagnosisKind::training_diverged};
  TrainingJudgement expected;
  EXPECT_EQ(judge_run(scenario_, plan_, trace_, golden_, expected, memory_, zero_).outcome,
            Outcome::reproduced);
}

TEST_F(JudgeTraining, InfiniteLossIsNamedByItsMicroStep) {
  trace_.micro_steps[2].loss = std::numeric_limits<double>::infinity();
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::failed);
  EXPECT_NE(verdict.diagnosis.find("the loss of micro-step 2 is inf"), std::string::npos)
      << verdict.diagnosis;
}

TEST_F(JudgeTraining, ReproductionWithAnUnexplainedFindingBesideItFails) {
  // The expected finding: a peak over a 1-byte budget.
  scenario_.memory.budget_peak_bytes = 1;
  scenario_.expect = {ExpectedOutcome::diagnosis, std::nullopt, DiagnosisKind::memory_over_budget};
  TrainingJudgement alone;
  EXPECT_EQ(judge_run(scenario_, plan_, trace_, golden_, alone, memory_, zero_).outcome,
            Outcome::reproduced);
  // Beside it, gradients that nothing explains: the reproduction is not understood.
  for (at::Tensor& gradient : trace_.steps[0].gradients) gradient.mul_(1.7);
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::failed);
  EXPECT_NE(verdict.found.find("memory: diagnosis memory_over_budget"), std::string::npos);
}

}  // namespace
}  // namespace trainrepro
