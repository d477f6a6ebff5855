// A leak is a step that leaves allocations alive, in every window, whatever their size.
#include <gtest/gtest.h>

#include "harness/memory/leak_analysis.h"

namespace trainrepro {
namespace {

std::vector<LiveAllocation> one_per_step(int64_t first, int64_t last, int64_t every,
                                         int64_t bytes) {
  std::vector<LiveAllocation> live;
  for (int64_t step = first; step < last; ++step) {
    if (step % every == 0) live.push_back({bytes, step});
  }
  return live;
}

TEST(SurvivorCount, EightBytesEveryStepIsALeak) {
  const SurvivorCount count = count_survivors_by_step(one_per_step(0, 40, 1, 8), 6, 39, 8);
  EXPECT_TRUE(count.in_every_window);
  EXPECT_EQ(count.windows, 4);
  EXPECT_DOUBLE_EQ(count.allocations_per_step, 1.0);
  EXPECT_DOUBLE_EQ(count.bytes_per_step, 8.0);
}

TEST(SurvivorCount, WarmUpAndTheLastStepDoNotCount) {
  std::vector<LiveAllocation> live = {{4096, 1}, {4096, 2}, {64, 39}};  // optimizer state, last
  EXPECT_FALSE(count_survivors_by_step(live, 6, 39, 8).in_every_window);
}

TEST(SurvivorCount, APeriodicLeakIsCaughtOnlyByAWindowThatSpansItsPeriod) {
  const std::vector<LiveAllocation> every_tenth = one_per_step(0, 60, 10, 550);
  EXPECT_FALSE(count_survivors_by_step(every_tenth, 6, 59, 8).in_every_window);
  EXPECT_TRUE(count_survivors_by_step(every_tenth, 6, 59, 11).in_every_window);
}

TEST(SurvivorCount, TooFewStepsForAWindowIsNoVerdict) {
  const SurvivorCount count = count_survivors_by_step(one_per_step(0, 10, 1, 8), 6, 9, 8);
  EXPECT_EQ(count.windows, 0);
  EXPECT_FALSE(count.in_every_window);
}

}  // namespace
}  // namespace trainrepro
