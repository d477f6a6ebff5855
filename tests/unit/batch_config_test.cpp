// DeepSpeed's batch resolution, every combination of given and missing keys, valid and invalid.
// Expected values follow deepspeed/runtime/config.py by hand (Python floor division included);
// messages are DeepSpeed's assertion texts, character for character.
#include <gtest/gtest.h>

#include "harness/scenario/batch_config.h"

namespace trainrepro {
namespace {

constexpr auto none = std::nullopt;

struct BatchCase {
  const char* name;
  std::optional<int64_t> tb, mb, gas;
  int64_t world_size;
  // Expected on success (tb, mb, gas); ignored when `error` is set.
  int64_t want_tb = 0, want_mb = 0, want_gas = 0;
  std::optional<ConfigErrorKind> error = std::nullopt;
  const char* message = "";
};

std::ostream& operator<<(std::ostream& out, const BatchCase& c) { return out << c.name; }

class BatchResolutionTest : public ::testing::TestWithParam<BatchCase> {};

TEST_P(BatchResolutionTest, MatchesDeepSpeed) {
  const BatchCase& c = GetParam();
  const BatchResolution resolution = resolve_batch_config({c.tb, c.mb, c.gas}, c.world_size);
  if (c.error) {
    ASSERT_TRUE(std::holds_alternative<ConfigError>(resolution)) << "expected an error";
    const ConfigError& error = std::get<ConfigError>(resolution);
    EXPECT_EQ(error.kind, *c.error);
    EXPECT_EQ(error.message, c.message);
  } else {
    ASSERT_TRUE(std::holds_alternative<ResolvedBatch>(resolution))
        << std::get<ConfigError>(resolution).message;
    const ResolvedBatch& batch = std::get<ResolvedBatch>(resolution);
    EXPECT_EQ(batch.train_batch_size, c.want_tb);
    EXPECT_EQ(batch.micro_batch_per_gpu, c.want_mb);
    EXPECT_EQ(batch.gradient_accumulation_steps, c.want_gas);
    EXPECT_EQ(batch.world_size, c.world_size);
  }
}

const auto kMismatch = ConfigErrorKind::batch_size_mismatch;
const auto kTbNotPositive = ConfigErrorKind::train_batch_size_not_positive;
const auto kMbNotPositive = ConfigErrorKind::micro_batch_not_positive;
const auto kGasNotPositive = ConfigErrorKind::gradient_accumulation_steps_not_positive;
const auto kMissing = ConfigErrorKind::batch_size_missing;

#define MISMATCH(text)                                                                      \
  "Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * " \
  "gradient_acc_step * world_size " text

// clang-format off
INSTANTIATE_TEST_SUITE_P(AllThreeGiven, BatchResolutionTest, ::testing::Values(
    BatchCase{"ConsistentIsKept", 32, 4, 4, 2, 32, 4, 4},
    BatchCase{"InconsistentIsRejected", 33, 17, 2, 2, 0, 0, 0, kMismatch, MISMATCH("33 != 17 * 2 * 2")},
    BatchCase{"ZeroGasIsRejected", 32, 4, 0, 1, 0, 0, 0, kGasNotPositive,
              "Gradient accumulation steps: 0 has to be greater than 0"},
    BatchCase{"NegativeTrainBatchIsRejectedFirst", -8, -4, 2, 1, 0, 0, 0, kTbNotPositive,
              "Train batch size: -8 has to be greater than 0"}));

INSTANTIATE_TEST_SUITE_P(TrainAndMicroGiven, BatchResolutionTest, ::testing::Values(
    BatchCase{"ComputesGas", 32, 4, none, 2, 32, 4, 4},
    BatchCase{"IndivisibleComputesFloorThenFailsAssertion", 30, 4, none, 2, 0, 0, 0, kMismatch,
              MISMATCH("30 != 4 * 3 * 2")},
    BatchCase{"MicroLargerThanTrainGivesZeroGas", 4, 8, none, 1, 0, 0, 0, kGasNotPositive,
              "Gradient accumulation steps: 0 has to be greater than 0"},
    BatchCase{"ZeroMicroIsDivisionByZero", 32, 0, none, 1, 0, 0, 0, kMbNotPositive,
              "ZeroDivisionError: integer division or modulo by zero (DeepSpeed divides by "
              "train_micro_batch_size_per_gpu = 0)"},
    BatchCase{"NegativeMicroUsesFloorDivision", 32, -5, none, 1, 0, 0, 0, kMbNotPositive,
              "Micro batch size per gpu: -5 has to be greater than 0"},
    BatchCase{"ZeroTrainBatchIsRejected", 0, 4, none, 1, 0, 0, 0, kTbNotPositive,
              "Train batch size: 0 has to be greater than 0"}));

INSTANTIATE_TEST_SUITE_P(TrainAndGasGiven, BatchResolutionTest, ::testing::Values(
    BatchCase{"ComputesMicro", 32, none, 4, 2, 32, 4, 4},
    BatchCase{"IndivisibleComputesFloorThenFailsAssertion", 33, none, 4, 2, 0, 0, 0, kMismatch,
              MISMATCH("33 != 4 * 4 * 2")},
    BatchCase{"GasLargerThanTrainGivesZeroMicro", 4, none, 8, 1, 0, 0, 0, kMbNotPositive,
              "Micro batch size per gpu: 0 has to be greater than 0"},
    BatchCase{"ZeroGasIsDivisionByZero", 32, none, 0, 1, 0, 0, 0, kGasNotPositive,
              "ZeroDivisionError: integer division or modulo by zero (DeepSpeed divides by "
              "gradient_accumulation_steps = 0)"},
    // Python: 32 // -3 == -11, where C++ division would give -10.
    BatchCase{"NegativeGasUsesFloorDivision", 32, none, -3, 1, 0, 0, 0, kMbNotPositive,
              "Micro batch size per gpu: -11 has to be greater than 0"}));

INSTANTIATE_TEST_SUITE_P(MicroAndGasGiven, BatchResolutionTest, ::testing::Values(
    BatchCase{"ComputesTrainBatch", none, 4, 8, 2, 64, 4, 8},
    BatchCase{"NegativeMicroGivesNegativeTrainBatch", none, -2, 3, 2, 0, 0, 0, kTbNotPositive,
              "Train batch size: -12 has to be greater than 0"},
    BatchCase{"ZeroGasGivesZeroTrainBatch", none, 4, 0, 1, 0, 0, 0, kTbNotPositive,
              "Train batch size: 0 has to be greater than 0"}));

INSTANTIATE_TEST_SUITE_P(OnlyTrainGiven, BatchResolutionTest, ::testing::Values(
    BatchCase{"SplitsAcrossRanksWithGasOne", 32, none, none, 4, 32, 8, 1},
    BatchCase{"IndivisibleByWorldSizeFailsAssertion", 3, none, none, 2, 0, 0, 0, kMismatch,
              MISMATCH("3 != 1 * 1 * 2")},
    BatchCase{"SmallerThanWorldSizeGivesZeroMicro", 1, none, none, 2, 0, 0, 0, kMbNotPositive,
              "Micro batch size per gpu: 0 has to be greater than 0"},
    BatchCase{"NegativeIsRejected", -32, none, none, 1, 0, 0, 0, kTbNotPositive,
              "Train batch size: -32 has to be greater than 0"}));

// The first field report: only the micro batch given, so GAS silently becomes 1.
INSTANTIATE_TEST_SUITE_P(OnlyMicroGiven, BatchResolutionTest, ::testing::Values(
    BatchCase{"GasBecomesOneAndTrainBatchIsMicroTimesRanks", none, 8, none, 2, 16, 8, 1},
    BatchCase{"ZeroIsRejected", none, 0, none, 1, 0, 0, 0, kTbNotPositive,
              "Train batch size: 0 has to be greater than 0"}));

INSTANTIATE_TEST_SUITE_P(NeitherTrainNorMicroGiven, BatchResolutionTest, ::testing::Values(
    BatchCase{"OnlyGasIsRejected", none, none, 4, 1, 0, 0, 0, kMissing,
              "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"},
    BatchCase{"NothingIsRejected", none, none, none, 1, 0, 0, 0, kMissing,
              "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"}));
// clang-format on

TEST(BatchConfig, RemembersWhichKeysWereGiven) {
  const auto resolution = resolve_batch_config({none, 8, none}, 1);
  const ResolvedBatch& batch = std::get<ResolvedBatch>(resolution);
  EXPECT_FALSE(batch.given.train_batch_size.has_value());
  EXPECT_EQ(batch.given.micro_batch_per_gpu, 8);
  EXPECT_FALSE(batch.given.gradient_accumulation_steps.has_value());
}

}  // namespace
}  // namespace trainrepro
