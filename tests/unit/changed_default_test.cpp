// The changed-default finding: a scenario judged by one DeepSpeed release's rules and trained by
// another names gradient_clipping's default when the config leaves it out (0.0 up to 0.19.2, 1.0
// from 0.19.3) and says nothing otherwise.
#include <gtest/gtest.h>

#include "harness/verdict/changed_default.h"

namespace trainrepro {
namespace {

DeepSpeedConfig config_following(const std::string& version, nlohmann::json verbatim) {
  std::string note;
  DeepSpeedConfig config;
  config.verbatim = std::move(verbatim);
  config.release = find_deepspeed_release(version, note);
  return config;
}

// A run whose parameters differ after step 0 while its gradients matched there.
TrainingJudgement update_differs() {
  TrainingJudgement training;
  training.first_parameter_mismatch = 0;
  training.first_gradient_mismatch = 1;
  return training;
}

TEST(ChangedDefault, NamesClippingWhenTheTrainedReleaseClipsAndTheJudgedDoesNot) {
  const auto finding = changed_default_finding(
      config_following("0.16.9", {{"train_batch_size", 8}}), "0.19.3", update_differs());
  ASSERT_TRUE(finding);
  EXPECT_NE(finding->find("DeepSpeed 0.19.3 clips at 1.0 by default"), std::string::npos)
      << *finding;
  EXPECT_NE(finding->find("follows DeepSpeed 0.16.9, which does not clip"), std::string::npos);
}

TEST(ChangedDefault, NamesClippingTheOtherWayRound) {
  const auto finding =
      changed_default_finding(config_following("0.19.8", {}), "0.18.8", update_differs());
  ASSERT_TRUE(finding);
  EXPECT_NE(finding->find("DeepSpeed 0.18.8 does not clip by default"), std::string::npos);
}

TEST(ChangedDefault, SilentAcrossTheBoundaryOnlyWhereTheDefaultsAgree) {
  EXPECT_FALSE(changed_default_finding(config_following("0.16.9", {}), "0.19.2", update_differs()));
  EXPECT_TRUE(changed_default_finding(config_following("0.16.9", {}), "0.19.3", update_differs()));
  EXPECT_FALSE(changed_default_finding(config_following("0.19.8", {}), "0.19.3", update_differs()));
  EXPECT_TRUE(changed_default_finding(config_following("0.19.8", {}), "0.19.2", update_differs()));
}

TEST(ChangedDefault, SilentWhenTheConfigSetsTheKey) {
  EXPECT_FALSE(changed_default_finding(config_following("0.16.9", {{"gradient_clipping", 0.0}}),
                                       "0.19.8", update_differs()));
}

// Clipping acts on the update: gradients that differ first (or with the parameters at the same
// step) have another cause, and parameters that never differ need no explanation.
TEST(ChangedDefault, SilentWhenTheGradientsDifferFirst) {
  TrainingJudgement gradients_first;
  gradients_first.first_gradient_mismatch = 0;
  gradients_first.first_parameter_mismatch = 0;
  EXPECT_FALSE(changed_default_finding(config_following("0.16.9", {}), "0.19.8", gradients_first));
  TrainingJudgement nothing_differs;
  EXPECT_FALSE(changed_default_finding(config_following("0.16.9", {}), "0.19.8", nothing_differs));
}

}  // namespace
}  // namespace trainrepro
