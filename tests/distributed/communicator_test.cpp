// The MPI communicator's collectives across real ranks (run under mpirun with 2 or 4 ranks):
// every rank checks the values it receives and the bytes it counts as sent.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "harness/distributed/communicator.h"
#include "harness/distributed/mpi_session.h"

namespace trainrepro {
namespace {

class MpiCollectives : public ::testing::Test {
 protected:
  void SetUp() override { communicator_ = make_mpi_communicator(); }
  std::unique_ptr<Communicator> communicator_;
};

TEST_F(MpiCollectives, AllReduceSumsEveryRanksTensor) {
  const int n = communicator_->world_size();
  const int r = communicator_->rank();
  at::Tensor tensor = at::full({5}, static_cast<double>(r + 1), at::kDouble);
  communicator_->all_reduce_sum(tensor);
  EXPECT_TRUE(at::allclose(tensor, at::full({5}, n * (n + 1) / 2.0, at::kDouble)));
  EXPECT_EQ(communicator_->ring_bytes(), 2 * 40 * (n - 1) / n);
}

TEST_F(MpiCollectives, ReduceScatterGivesEachRankTheSumOfItsChunk) {
  const int n = communicator_->world_size();
  const int r = communicator_->rank();
  // Rank r contributes chunk c filled with (c + 1) * (r + 1).
  at::Tensor input = at::arange(1, n + 1, at::kFloat).repeat_interleave(3) * (r + 1);
  at::Tensor output = at::empty({3}, at::kFloat);
  communicator_->reduce_scatter_sum(input, output);
  EXPECT_TRUE(at::allclose(output, at::full({3}, (r + 1) * n * (n + 1) / 2.0f, at::kFloat)));
}

TEST_F(MpiCollectives, AllGatherConcatenatesInRankOrder) {
  const int n = communicator_->world_size();
  at::Tensor input = at::full({2}, static_cast<double>(communicator_->rank()), at::kDouble);
  at::Tensor output = at::empty({2 * n}, at::kDouble);
  communicator_->all_gather(input, output);
  EXPECT_TRUE(at::equal(output, at::arange(0, n, at::kDouble).repeat_interleave(2)));
}

TEST_F(MpiCollectives, BroadcastCopiesTheRootsTensor) {
  at::Tensor tensor =
      communicator_->rank() == 0 ? at::arange(4, at::kDouble) : at::zeros({4}, at::kDouble);
  communicator_->broadcast(tensor, 0);
  EXPECT_TRUE(at::equal(tensor, at::arange(4, at::kDouble)));
}

TEST_F(MpiCollectives, NonContiguousTensorIsRefused) {
  at::Tensor tensor = at::zeros({4, 4}, at::kDouble).t();
  EXPECT_THROW(communicator_->all_reduce_sum(tensor), std::invalid_argument);
}

}  // namespace
}  // namespace trainrepro
