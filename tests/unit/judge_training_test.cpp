// Judging a training run against its golden: a correct run passes, a bug nobody predicted is
// reported as unexplained with its numbers, and an expected bug that is absent is not reproduced.
#include <gtest/gtest.h>

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

TEST_F(JudgeTraining, ParameterOnlyMismatchBlamesTheOptimizerUpdate) {
  trace_.steps[1].parameters[0].add_(1e-3);
  TrainingJudgement judgement;
  const Verdict verdict = judge_run(scenario_, plan_, trace_, golden_, judgement, memory_, zero_);
  EXPECT_EQ(verdict.outcome, Outcome::failed);
  EXPECT_EQ(judgement.first_parameter_mismatch, 1);
  EXPECT_NE(verdict.diagnosis.find("the optimizer update itself differs"), std::string::npos);
}

}  // namespace
}  // namespace trainrepro
