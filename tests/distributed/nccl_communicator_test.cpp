// The NCCL communicator and the ZeRO stages on CUDA, at whatever world size mpirun gives (CTest
// runs it with one rank: the nightly GPU machines have at least one GPU). Without a usable GPU
// every test is skipped, so the binary still builds and runs in CPU-only CI.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "harness/distributed/communicator.h"
#include "harness/distributed/mpi_session.h"
#include "harness/engine/reference_engine.h"
#include "harness/engine/runtime_info.h"
#include "harness/loop/sample_assignment.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

class NcclOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_is_available()) GTEST_SKIP() << "no usable CUDA GPU on this machine";
    communicator_ = make_nccl_communicator();
  }
  std::unique_ptr<Communicator> communicator_;
};

TEST_F(NcclOnGpu, CollectivesSumGatherAndScatterCudaTensors) {
  const int n = communicator_->world_size();
  const int r = communicator_->rank();
  const at::TensorOptions cuda = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA);
  at::Tensor summed = at::full({6}, static_cast<double>(r + 1), cuda);
  communicator_->all_reduce_sum(summed);
  EXPECT_TRUE(at::allclose(summed.cpu(), at::full({6}, n * (n + 1) / 2.0, at::kFloat)));

  at::Tensor gathered = at::empty({2 * n}, cuda);
  communicator_->all_gather(at::full({2}, static_cast<double>(r), cuda), gathered);
  EXPECT_TRUE(at::equal(gathered.cpu(), at::arange(n, at::kFloat).repeat_interleave(2)));

  at::Tensor shard = at::empty({3}, cuda);
  communicator_->reduce_scatter_sum(at::ones({3 * n}, cuda), shard);
  EXPECT_TRUE(at::allclose(shard.cpu(), at::full({3}, static_cast<double>(n), at::kFloat)));
  EXPECT_EQ(communicator_->ring_bytes(), (2 * 24 + 8 * n + 12 * n) * (n - 1) / n);
}

// Every ZeRO stage on CUDA through NCCL ends where stage 0 on the CPU does, in float64.
TEST_F(NcclOnGpu, EveryZeroStageOnCudaMatchesStageZeroOnCpu) {
  const ModelSpec model_spec{{"mlp", MlpOptions{{15, 29, 5}, Activation::tanh}, 11}};
  const DataSpec data{"classification", ClassificationData{15, 5}, 12};
  const int64_t ranks = communicator_->world_size();
  const int64_t rank = communicator_->rank();
  const auto train = [&](int64_t stage, at::Device device, Communicator* communicator) {
    Plan plan;
    const int64_t micro_batch = communicator ? 2 : 2 * ranks;
    plan.batch = {
        micro_batch * 2 * (communicator ? ranks : 1), micro_batch, 2, communicator ? ranks : 1, {}};
    plan.device = device.is_cuda() ? Device::cuda : Device::cpu;
    plan.dtype = EngineDtype::float64;
    plan.zero_stage = stage;
    plan.optimizer.kind = OptimizerKind::adamw;
    plan.optimizer.lr = 0.01;
    plan.gradient_clipping = 0.5;
    auto model = build_model(model_spec, at::kDouble, device);
    ReferenceEngine engine(model, plan, communicator);
    const SampleSource source(data);
    // Without a communicator one process plays every rank: its micro-batch is theirs together.
    const SampleAssignment samples{micro_batch, communicator ? ranks : 1};
    for (int64_t m = 0; m < 4; ++m) {
      const SampleRange mine = samples.micro_batch_of(m, communicator ? rank : 0);
      const Batch batch = source.samples(mine.begin, mine.end, at::kDouble, device);
      engine.backward(model->loss_sum(batch) / static_cast<double>(batch.items));
      engine.step();
    }
    std::vector<at::Tensor> parameters;
    for (const at::Tensor& parameter : engine.gather_full_parameters()) {
      parameters.push_back(parameter.cpu());
    }
    return parameters;
  };
  const std::vector<at::Tensor> reference = train(0, at::kCPU, nullptr);
  for (int64_t stage = 0; stage <= 3; ++stage) {
    const std::vector<at::Tensor> on_gpu = train(stage, at::kCUDA, communicator_.get());
    ASSERT_EQ(on_gpu.size(), reference.size());
    for (size_t i = 0; i < on_gpu.size(); ++i) {
      EXPECT_LT((on_gpu[i] - reference[i]).abs().max().item<double>(), 1e-10)
          << "stage " << stage << ", parameter " << i;
    }
  }
}

}  // namespace
}  // namespace trainrepro
