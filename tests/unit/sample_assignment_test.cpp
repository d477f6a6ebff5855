// The one rule for which samples each rank feeds: W ranks x MB x GAS consecutive samples make
// one golden batch, with no overlap and no gap, and evaluation samples never meet training ones.
#include <gtest/gtest.h>

#include <set>

#include "harness/loop/sample_assignment.h"

namespace trainrepro {
namespace {

TEST(SampleAssignment, RanksAndMicroStepsTileTheGoldenBatchesExactly) {
  for (int64_t world : {1, 2, 3}) {
    for (int64_t gas : {1, 3, 6}) {
      const SampleAssignment samples{/*micro_batch=*/4, world};
      std::set<int64_t> seen;
      for (int64_t m = 0; m < gas; ++m) {
        for (int64_t r = 0; r < world; ++r) {
          const SampleRange range = samples.micro_batch_of(m, r);
          EXPECT_EQ(range.end - range.begin, 4);
          for (int64_t i = range.begin; i < range.end; ++i) EXPECT_TRUE(seen.insert(i).second);
        }
      }
      // The golden's first step: [0, W * MB * GAS).
      EXPECT_EQ(static_cast<int64_t>(seen.size()), world * 4 * gas);
      EXPECT_EQ(*seen.rbegin(), world * 4 * gas - 1);
      const SampleRange window = samples.all_ranks(0, gas);
      EXPECT_EQ(window.begin, 0);
      EXPECT_EQ(window.end, world * 4 * gas);
    }
  }
}

TEST(SampleAssignment, EvaluationSamplesLieBeyondTrainingAndAreTheSameOnEveryRank) {
  const SampleAssignment samples{/*micro_batch=*/8, /*world_size=*/3};
  const SampleRange first = samples.evaluation_batch(0, 0, 2);
  const SampleRange next = samples.evaluation_batch(1, 1, 2);
  EXPECT_EQ(first.begin, kEvaluationFirstSample);
  EXPECT_EQ(next.begin, kEvaluationFirstSample + 3 * 8);
  EXPECT_EQ(next.end - next.begin, 8);  // one micro-batch of the rank's own size
}

}  // namespace
}  // namespace trainrepro
