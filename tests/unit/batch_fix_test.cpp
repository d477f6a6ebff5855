// Suggested batch fixes are checked with DeepSpeed's own batch rules before they are printed.
#include <gtest/gtest.h>

#include "harness/verdict/batch_fix.h"

namespace trainrepro {
namespace {

ResolvedBatch resolved(BatchInputs given, int64_t world) {
  return std::get<ResolvedBatch>(resolve_batch_config(given, world));
}

TEST(BatchFix, OneRankGetsBothKeysThatReachTheIntendedBatch) {
  const ResolvedBatch batch = resolved({std::nullopt, 8, std::nullopt}, 1);
  EXPECT_EQ(suggest_batch_fix(batch, 32),
            "Fix: set \"gradient_accumulation_steps\": 4 or \"train_batch_size\": 32 in the "
            "DeepSpeed config");
}

TEST(BatchFix, ThreeRanksNeverGetAFixTheBatchRulesRefuse) {
  // Micro batch 4 on 3 ranks: 32 is not a multiple of 12, so neither GAS 2 nor TB 32 is valid.
  const ResolvedBatch batch = resolved({std::nullopt, 4, std::nullopt}, 3);
  const std::string fix = suggest_batch_fix(batch, 32);
  EXPECT_EQ(fix.find("Fix: set"), std::string::npos) << fix;
  EXPECT_NE(fix.find("not a multiple of train_micro_batch_size_per_gpu x world_size = 12"),
            std::string::npos)
      << fix;
  EXPECT_NE(fix.find("Nearest: \"gradient_accumulation_steps\": 3 (train_batch_size 36)"),
            std::string::npos)
      << fix;
  // 36 is reachable on 3 ranks: both fixes, each valid there.
  EXPECT_EQ(suggest_batch_fix(batch, 36),
            "Fix: set \"gradient_accumulation_steps\": 3 or \"train_batch_size\": 36 in the "
            "DeepSpeed config");
}

TEST(BatchFix, AllThreeGivenChangesThemTogether) {
  const ResolvedBatch batch = resolved({16, 8, 1}, 2);
  const std::string fix = suggest_batch_fix(batch, 32);
  EXPECT_NE(fix.find("\"gradient_accumulation_steps\": 2 with \"train_batch_size\": 32"),
            std::string::npos)
      << fix;
  EXPECT_NE(fix.find("\"train_batch_size\": 32 without gradient_accumulation_steps"),
            std::string::npos)
      << fix;
}

}  // namespace
}  // namespace trainrepro
