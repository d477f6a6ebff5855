// DeepSpeed's LR schedulers read from a config and computed as the engine steps them. The
// expected rates were produced by the real DeepSpeed 0.19.8 (deepspeed.runtime.lr_schedules on
// torch.optim.AdamW, stepped once per update: the rate each update uses), not by this code.
#include <gtest/gtest.h>

#include <vector>

#include "harness/scenario/deepspeed_config.h"

namespace trainrepro {
namespace {

DeepSpeedConfig read(const nlohmann::json& scheduler, double lr,
                     const std::string& version = "0.19.8") {
  std::string note;
  const DeepSpeedRelease& release = *find_deepspeed_release(version, note);
  const nlohmann::json config = {{"train_batch_size", 8},
                                 {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", lr}}}}},
                                 {"scheduler", scheduler}};
  return read_deepspeed_config(config, "ds.json", "", release);
}

// The rate of each of the first updates: update u uses the scheduler's iteration u - 1.
std::vector<double> rates(const DeepSpeedConfig& config, int updates = 8) {
  std::vector<double> result;
  for (int u = 0; u < updates; ++u) {
    result.push_back(scheduled_lr(*config.scheduler, u - 1, config.optimizer->lr));
  }
  return result;
}

void expect_rates(const DeepSpeedConfig& config, const std::vector<double>& expected) {
  ASSERT_TRUE(config.scheduler.has_value());
  const std::vector<double> actual = rates(config, static_cast<int>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-15 + 1e-12 * expected[i]) << "update " << i;
  }
}

nlohmann::json scheduler(const std::string& type, const nlohmann::json& params) {
  return {{"type", type}, {"params", params}};
}

TEST(LrSchedule, MatchesDeepSpeed0198) {
  expect_rates(read(scheduler("WarmupLR", {{"warmup_min_lr", 0.0}, {"warmup_num_steps", 4}}), 0.01),
               {0.0, 0.0, 0.005, 0.007924812503605782, 0.01, 0.01, 0.01, 0.01});
  // warmup_max_lr absent: the optimizer's lr (0.19.3+).
  expect_rates(read(scheduler("WarmupLR", {{"warmup_min_lr", 0.001},
                                           {"warmup_num_steps", 3},
                                           {"warmup_type", "linear"}}),
                    0.02),
               {0.001, 0.001, 0.007333333333333333, 0.013666666666666667, 0.02, 0.02, 0.02, 0.02});
  // One warm-up step is silently two.
  expect_rates(read(scheduler("WarmupLR", {{"warmup_num_steps", 1}}), 0.01),
               {0.0, 0.0, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01});
  expect_rates(read(scheduler("WarmupDecayLR", {{"total_num_steps", 6},
                                                {"warmup_min_lr", 0.0},
                                                {"warmup_max_lr", 0.1},
                                                {"warmup_num_steps", 2},
                                                {"warmup_type", "linear"}}),
                    0.5),
               {0.0, 0.0, 0.05, 0.1, 0.07500000000000001, 0.05, 0.025, 0.0});
  // WarmupDecayLR's warmup_max_lr still defaults to 0.001, whatever the optimizer's lr.
  expect_rates(read(scheduler("WarmupDecayLR", {{"total_num_steps", 5}, {"warmup_num_steps", 3}}),
                    0.5),
               {0.0, 0.0, 0.0006309297535714573, 0.001, 0.001, 0.0005, 0.0, 0.0});
  expect_rates(read(scheduler("WarmupCosineLR", {{"total_num_steps", 6},
                                                 {"warmup_num_steps", 3},
                                                 {"warmup_min_ratio", 0.1}}),
                    0.1),
               {0.0, 0.010000000000000002, 0.06678367782143116, 0.1, 0.0750025,
                0.025007500000000012, 1e-05, 1e-05});
  expect_rates(read(scheduler("WarmupCosineLR", {{"total_num_steps", 3},
                                                 {"warmup_num_steps", 3},
                                                 {"warmup_type", "linear"}}),
                    0.1),
               {0.0, 0.0, 0.03333333333333333, 0.06666666666666667, 1e-05, 1e-05, 1e-05, 1e-05});
}

// 0.16.9: WarmupLR's maximum was 0.001 whatever the optimizer's lr.
TEST(LrSchedule, FollowsTheNamedRelease) {
  const DeepSpeedConfig old = read(scheduler("WarmupLR", {{"warmup_num_steps", 2}}), 0.5, "0.16.9");
  EXPECT_EQ(scheduled_lr(*old.scheduler, 5, 0.5), 0.001);
  const DeepSpeedConfig current = read(scheduler("WarmupLR", {{"warmup_num_steps", 2}}), 0.5);
  EXPECT_EQ(scheduled_lr(*current.scheduler, 5, 0.5), 0.5);
}

// What deepspeed.initialize refuses, in Python's words; what it accepts but we lack.
TEST(LrSchedule, RefusesWhatDeepSpeedCannotBuild) {
  const auto refused = [](const nlohmann::json& block) {
    const DeepSpeedConfig config = read(block, 0.01);
    EXPECT_FALSE(config.scheduler.has_value());
    return config.scheduler_refused ? config.scheduler_refused->message : std::string("(none)");
  };
  EXPECT_EQ(refused(scheduler("WarmupLR", {{"warmup_num_steps", 0}})),
            "ValueError: warmup_num_steps must be a positive integer, got 0");
  EXPECT_EQ(refused(scheduler("WarmupLR", {{"warmup_num_steps", 100.0}})),
            "ValueError: warmup_num_steps must be a positive integer, got 100.0");
  EXPECT_EQ(refused(scheduler("WarmupDecayLR", {{"warmup_num_steps", 10}})),
            "TypeError: WarmupDecayLR.__init__() missing 1 required positional argument: "
            "'total_num_steps'");
  // The Trainer fills warmup_min_lr even under WarmupCosineLR, which has no such parameter.
  EXPECT_EQ(refused(scheduler("WarmupCosineLR", {{"total_num_steps", 10}, {"warmup_min_lr", 0}})),
            "TypeError: WarmupCosineLR.__init__() got an unexpected keyword argument "
            "'warmup_min_lr' (at ds.json:/scheduler/params/warmup_min_lr)");
  EXPECT_EQ(refused({{"type", "WarmupLr"}, {"params", nlohmann::json::object()}}),
            "AssertionError: DeepSpeed does not recognize LR scheduler WarmupLr");
  EXPECT_EQ(refused({{"type", "WarmupLR"}}),
            "TypeError: WarmupLR() argument after ** must be a mapping, not NoneType (a scheduler "
            "needs \"params\")");

  const DeepSpeedConfig one_cycle =
      read(scheduler("OneCycle", {{"cycle_min_lr", 0.0}, {"cycle_max_lr", 0.1}}), 0.01);
  EXPECT_FALSE(one_cycle.scheduler_refused.has_value());
  EXPECT_NE(one_cycle.scheduler_not_implemented.find("\"OneCycle\" is valid in DeepSpeed but not "
                                                     "implemented"),
            std::string::npos);
}

}  // namespace
}  // namespace trainrepro
