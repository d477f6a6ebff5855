// The Hugging Face Trainer on a config without a gradient_accumulation_steps key (DeepSpeed
// resolves GAS 1): under accelerate 1.15.0 it hands DeepSpeed its own boundary and each update
// averages the intended batch; under 1.7.0 DeepSpeed's GAS 1 steps every micro-batch on a
// quarter of its gradient, which is diagnosed as trainer_boundary_ignored (not no_accumulation,
// whose gradient would be the whole micro-batch's).
#include <gtest/gtest.h>

#include "harness/golden/golden_run.h"
#include "harness/loop/training_loop.h"
#include "harness/scenario/load_scenario.h"
#include "harness/verdict/judge_training.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class TrainerBoundary : public ScenarioFileTest {
 protected:
  Verdict judge(const std::string& accelerate, TrainingJudgement& judgement) {
    nlohmann::json scenario = valid_scenario();
    scenario["deepspeed"] = {{"train_micro_batch_size_per_gpu", "auto"},
                             {"zero_optimization", {{"stage", 0}}}};
    scenario["hf_trainer"] = {{"per_device_train_batch_size", 2},
                              {"gradient_accumulation_steps", 4},
                              {"learning_rate", 1e-3},
                              {"accelerate_version", accelerate}};
    scenario["golden"] = {{"train_batch_size", 8}, {"steps", 2}};
    scenario["dtype"] = "float64";
    const Scenario loaded = load_scenario(write("scenario.json", scenario.dump()));
    const Plan plan = std::get<Plan>(resolve_plan(loaded, Device::cpu));
    const Golden golden = compute_golden(loaded);
    const Trace trace = run_training_loop(loaded.model, loaded.data, loaded.loop, plan,
                                          LoopOptions{/*recorded_steps=*/2});
    MemoryJudgement memory;
    ZeroJudgement zero;
    return judge_run(loaded, plan, trace, golden, judgement, memory, zero);
  }
};

TEST_F(TrainerBoundary, ExplicitBoundaryKeepsTheIntendedBatch) {
  TrainingJudgement judgement;
  const Verdict verdict = judge("1.15.0", judgement);
  EXPECT_EQ(verdict.outcome, Outcome::passed) << verdict.found;
}

TEST_F(TrainerBoundary, BeforeAccelerate18EveryMicroBatchStepsOnAQuarterOfItsGradient) {
  TrainingJudgement judgement;
  const Verdict verdict = judge("1.7.0", judgement);
  ASSERT_TRUE(judgement.diagnosis.has_value());
  ASSERT_TRUE(judgement.diagnosis->kind.has_value()) << verdict.diagnosis;
  EXPECT_EQ(*judgement.diagnosis->kind, DiagnosisKind::trainer_boundary_ignored);
  EXPECT_EQ(judgement.diagnosis->step, 0);
  EXPECT_NE(verdict.diagnosis.find("Effective batch 2, not 8. Fixed in accelerate 1.8.0"),
            std::string::npos)
      << verdict.diagnosis;
  // no_accumulation was tested too and is 3/4 of the prediction away (the Trainer's 1/4).
  for (const HypothesisResult& tested : judgement.diagnosis->tested) {
    if (tested.kind == DiagnosisKind::no_accumulation) {
      EXPECT_NEAR(tested.relative_error, 0.75, 1e-9);
    }
  }
}

}  // namespace
}  // namespace trainrepro
