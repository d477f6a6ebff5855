// DeepSpeed's LR schedulers read from a config and computed as the engine steps them. The
// expected rates were produced by the real DeepSpeed 0.19.8 (deepspeed.runtime.lr_schedules on
// torch.optim.AdamW, stepped once per update: the rate each update uses), not by this code.
#include <gtest/gtest.h>

#include <optional>
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

// warmup_num_steps by each release's rule (runtime/lr_schedules.py WarmupLR.__init__): 0.16.9
// takes any number as max(2, n), 0.19.8 refuses what is not a positive Python int. The rates are
// the real WarmupLR's on torch.optim.AdamW (warmup_max_lr 0.01), 0.16.9 and 0.19.8 installed.
TEST(LrSchedule, WarmupNumStepsFollowsEachReleasesRule) {
  const auto warmup = [](const nlohmann::json& steps, const std::string& version) {
    return read(scheduler("WarmupLR", {{"warmup_min_lr", 0.0},
                                       {"warmup_max_lr", 0.01},
                                       {"warmup_num_steps", steps}}),
                0.01, version);
  };
  const std::vector<double> over_two_steps = {0.0, 0.0, 0.01, 0.01, 0.01, 0.01};
  for (const nlohmann::json& steps : {nlohmann::json(0), nlohmann::json(-3), nlohmann::json(true)}) {
    const DeepSpeedConfig old = warmup(steps, "0.16.9");
    EXPECT_FALSE(old.scheduler_refused.has_value()) << steps;
    expect_rates(old, over_two_steps);
  }
  expect_rates(warmup(10.0, "0.16.9"), {0.0, 0.0, 0.0030102999566398113, 0.004771212547196624,
                                        0.006020599913279623, 0.006989700043360187});
  // max(2, 2.5) warms up over a fraction of a step: accepted by DeepSpeed, not modelled here.
  const DeepSpeedConfig fraction = warmup(2.5, "0.16.9");
  EXPECT_FALSE(fraction.scheduler_refused.has_value());
  EXPECT_NE(fraction.scheduler_not_implemented.find("fractional warmup_num_steps (2.5"),
            std::string::npos);
  EXPECT_EQ(warmup("x", "0.16.9").scheduler_refused->message,
            "TypeError: '>' not supported between instances of 'str' and 'int' "
            "(max(2, warmup_num_steps))");

  expect_rates(warmup(true, "0.19.8"), over_two_steps);  // a bool is a Python int: True is 1
  for (const auto& [steps, said] : std::vector<std::pair<nlohmann::json, std::string>>{
           {0, "0"}, {-3, "-3"}, {2.5, "2.5"}, {10.0, "10.0"}, {"x", "x"}, {false, "False"}}) {
    const DeepSpeedConfig current = warmup(steps, "0.19.8");
    ASSERT_TRUE(current.scheduler_refused.has_value()) << steps;
    EXPECT_EQ(current.scheduler_refused->message,
              "ValueError: warmup_num_steps must be a positive integer, got " + said);
  }
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
  EXPECT_EQ(refused(scheduler("OneCycle", {{"cycle_max_lr", 0.1}})),
            "TypeError: OneCycle.__init__() missing 1 required positional argument: "
            "'cycle_min_lr'");
  EXPECT_EQ(refused(scheduler("OneCycle", nlohmann::json::object())),
            "TypeError: OneCycle.__init__() missing 2 required positional arguments: "
            "'cycle_min_lr' and 'cycle_max_lr'");
  EXPECT_EQ(refused(scheduler("OneCycle", {{"cycle_min_lr", 0.0},
                                           {"cycle_max_lr", 0.1},
                                           {"cycle_first_step_size", 0}})),
            "ValueError: cycle_first_step_size must be positive, got 0");
  EXPECT_EQ(refused(scheduler("OneCycle", {{"cycle_min_lr", 0.0},
                                           {"cycle_max_lr", 0.1},
                                           {"warmup_num_steps", 3}})),
            "TypeError: OneCycle.__init__() got an unexpected keyword argument "
            "'warmup_num_steps' (at ds.json:/scheduler/params/warmup_num_steps)");

  const DeepSpeedConfig range_test =
      read(scheduler("LRRangeTest", {{"lr_range_test_min_lr", 0.001}}), 0.01);
  EXPECT_FALSE(range_test.scheduler_refused.has_value());
  EXPECT_NE(range_test.scheduler_not_implemented.find("\"LRRangeTest\" is valid in DeepSpeed but "
                                                      "not implemented"),
            std::string::npos);
}

// OneCycle: the rate and Adam's beta1 written at construction (iteration -1) and after each of 16
// scheduler steps, as the real DeepSpeed 0.19.8 and 0.16.9 OneCycle classes wrote them into a
// torch.optim.AdamW (beta2 is always 0.99). 0.16.9 ignores the stair counts.
struct OneCycleCase {
  nlohmann::json params;
  std::vector<double> lr_0_19_8;
  std::vector<double> beta1_0_19_8;
  std::vector<double> lr_0_16_9;
};

TEST(LrSchedule, OneCycleMatchesDeepSpeed) {
  const std::vector<OneCycleCase> cases = {
      {{{"cycle_min_lr", 0.001}, {"cycle_max_lr", 0.01}, {"cycle_first_step_size", 3}, {"cycle_second_step_size", 2}, {"decay_step_size", 2}, {"decay_lr_rate", 0.5}, {"cycle_min_mom", 0.85}, {"cycle_max_mom", 0.95}, {"decay_mom_rate", 0.01}},
       {0.001, 0.004, 0.006999999999999999, 0.009999999999999998, 0.0055, 0.001, 0.0008, 0.0006666666666666666, 0.0005714285714285715, 0.0005, 0.00044444444444444447, 0.0004, 0.00036363636363636367, 0.0003333333333333333, 0.0003076923076923077, 0.00028571428571428574, 0.0002666666666666667},
       {0.85, 0.9166666666666666, 0.8833333333333333, 0.85, 0.9, 0.95, 0.9547499999999999, 0.9594999999999999, 0.9642499999999998, 0.969, 0.9737499999999999, 0.9784999999999999, 0.9832499999999998, 0.988, 0.9927499999999999, 0.9974999999999999, 1.0022499999999999},
       {0.001, 0.004, 0.006999999999999999, 0.009999999999999998, 0.0055, 0.001, 0.0008, 0.0006666666666666666, 0.0005714285714285715, 0.0005, 0.00044444444444444447, 0.0004, 0.00036363636363636367, 0.0003333333333333333, 0.0003076923076923077, 0.00028571428571428574, 0.0002666666666666667}},
      {{{"cycle_min_lr", 0.0005}, {"cycle_max_lr", 0.004}, {"cycle_first_step_size", 5}, {"cycle_second_step_size", 3}, {"cycle_first_stair_count", 2}, {"cycle_second_stair_count", 3}, {"decay_step_size", 3}, {"decay_lr_rate", 0.2}, {"decay_mom_rate", 0.05}},
       {0.0005, 0.0005, 0.0005, 0.0022500000000000003, 0.0022500000000000003, 0.004, 0.002833333333333333, 0.0016666666666666666, 0.0005, 0.00046875000000000004, 0.0004411764705882353, 0.0004166666666666667, 0.0003947368421052632, 0.00037499999999999995, 0.0003571428571428572, 0.0003409090909090909, 0.00032608695652173916},
       {0.8, 0.9, 0.9, 0.8500000000000001, 0.8500000000000001, 0.8, 0.8333333333333334, 0.8666666666666667, 0.9, 0.9149999999999999, 0.9300000000000002, 0.9450000000000001, 0.96, 0.975, 0.9900000000000001, 1.0050000000000001, 1.02},
       {0.0005, 0.0012000000000000001, 0.0019000000000000002, 0.0026, 0.0033000000000000004, 0.004, 0.002833333333333333, 0.0016666666666666666, 0.0005, 0.00046875000000000004, 0.0004411764705882353, 0.0004166666666666667, 0.0003947368421052632, 0.00037499999999999995, 0.0003571428571428572, 0.0003409090909090909, 0.00032608695652173916}},
      {{{"cycle_min_lr", 0.01}, {"cycle_max_lr", 0.1}, {"cycle_first_step_size", 4}, {"cycle_first_stair_count", 2}},
       {0.01, 0.01, 0.05500000000000001, 0.05500000000000001, 0.1, 0.05500000000000001, 0.05500000000000001, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01},
       {0.8, 0.9, 0.8500000000000001, 0.8500000000000001, 0.8, 0.8500000000000001, 0.8500000000000001, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9},
       {0.01, 0.0325, 0.05500000000000001, 0.0775, 0.1, 0.0775, 0.05500000000000001, 0.0325, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01}},
  };
  for (const OneCycleCase& one : cases) {
    const DeepSpeedConfig current = read(scheduler("OneCycle", one.params), 0.123);
    const DeepSpeedConfig old = read(scheduler("OneCycle", one.params), 0.123, "0.16.9");
    ASSERT_TRUE(current.scheduler.has_value()) << one.params.dump();
    ASSERT_TRUE(old.scheduler.has_value()) << one.params.dump();
    for (size_t i = 0; i < one.lr_0_19_8.size(); ++i) {
      const int64_t iteration = static_cast<int64_t>(i) - 1;
      EXPECT_NEAR(scheduled_lr(*current.scheduler, iteration, 0.123), one.lr_0_19_8[i],
                  1e-15 + 1e-12 * one.lr_0_19_8[i])
          << one.params.dump() << " iteration " << iteration;
      EXPECT_NEAR(scheduled_lr(*old.scheduler, iteration, 0.123), one.lr_0_16_9[i],
                  1e-15 + 1e-12 * one.lr_0_16_9[i])
          << "0.16.9 " << one.params.dump() << " iteration " << iteration;
      const std::optional<Betas> betas = scheduled_betas(*current.scheduler, iteration);
      ASSERT_TRUE(betas.has_value());
      EXPECT_NEAR(betas->beta1, one.beta1_0_19_8[i], 1e-12) << one.params.dump() << " iteration " << iteration;
      EXPECT_EQ(betas->beta2, 0.99);
    }
  }
  // Without cycle_momentum the betas stay the optimizer's.
  const DeepSpeedConfig fixed = read(scheduler("OneCycle", {{"cycle_min_lr", 0.001},
                                                           {"cycle_max_lr", 0.01},
                                                           {"cycle_momentum", false}}),
                                     0.123);
  EXPECT_FALSE(scheduled_betas(*fixed.scheduler, 3).has_value());
}

}  // namespace
}  // namespace trainrepro
