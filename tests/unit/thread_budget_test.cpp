// LibTorch's threads: each rank process takes its share of the cores, or what
// TRAINREPRO_THREADS says; a bad value is refused, never guessed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "harness/cli/thread_budget.h"

namespace trainrepro {
namespace {

class ThreadBudget : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("TRAINREPRO_THREADS"); }
};

TEST_F(ThreadBudget, EachRankProcessTakesOneThreadByDefault) {
  ::unsetenv("TRAINREPRO_THREADS");
  EXPECT_EQ(choose_intra_op_threads(), 1);
}

TEST_F(ThreadBudget, EnvironmentOverridesAndBadValuesAreRefused) {
  ::setenv("TRAINREPRO_THREADS", "3", 1);
  EXPECT_EQ(choose_intra_op_threads(), 3);
  ::setenv("TRAINREPRO_THREADS", "0", 1);
  EXPECT_THROW(choose_intra_op_threads(), std::invalid_argument);
  ::setenv("TRAINREPRO_THREADS", "two", 1);
  EXPECT_THROW(choose_intra_op_threads(), std::invalid_argument);
}

}  // namespace
}  // namespace trainrepro
