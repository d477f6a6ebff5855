// The reference engine at every ZeRO stage across real ranks (run under mpirun with 2 and 4
// ranks): in float64, the parameters after two accumulated AdamW steps with clipping equal those
// of one rank training on the same samples without ZeRO; each rank holds exactly the model
// states the ZeRO paper's formula gives for the padded partition, and sends what it says.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "harness/distributed/communicator.h"
#include "harness/engine/model_states.h"
#include "harness/engine/reference_engine.h"
#include "harness/loop/sample_assignment.h"
#include "harness/memory/counting_cpu_allocator.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

constexpr int64_t kMicroBatch = 2;
constexpr int64_t kGas = 2;
constexpr int64_t kSteps = 2;

// 614 elements and odd-sized weights: padded at 4 ranks (flat) and at 2 and 4 (per parameter).
const ModelSpec kModel{{"mlp", MlpOptions{{15, 29, 5}, Activation::tanh}, 11}};
const DataSpec kData{"classification", ClassificationData{15, 5}, 12};

Plan plan_for(int64_t stage, int64_t micro_batch, int64_t world_size) {
  Plan plan;
  plan.batch = {micro_batch * kGas * world_size, micro_batch, kGas, world_size, {}};
  plan.dtype = EngineDtype::float64;
  plan.zero_stage = stage;
  plan.zero3_param_persistence_threshold = 0;  // every parameter partitioned at stage 3
  plan.optimizer.kind = OptimizerKind::adamw;
  plan.optimizer.lr = 0.01;
  plan.optimizer.weight_decay = 0.01;
  plan.gradient_clipping = 0.5;
  return plan;
}

struct TrainingRun {
  std::vector<at::Tensor> parameters;  // whole, after the last step
  std::vector<OptimizerStepEvent> events;
};

// Rank r takes micro-batch samples [(m·W + r)·MB, +MB), as the training loop does.
TrainingRun train(const Plan& plan, Communicator* communicator) {
  const int64_t ranks = communicator ? communicator->world_size() : 1;
  const int64_t rank = communicator ? communicator->rank() : 0;
  auto model = build_model(kModel, at::kDouble, at::kCPU);
  ReferenceEngine engine(model, plan, communicator);
  TrainingRun run;
  engine.observed_steps = 0;
  engine.on_optimizer_step = [&](const OptimizerStepEvent& event) { run.events.push_back(event); };
  const SampleSource source(kData);
  const SampleAssignment samples{plan.batch.micro_batch_per_gpu, ranks};
  for (int64_t m = 0; m < kSteps * kGas; ++m) {
    const SampleRange mine = samples.micro_batch_of(m, rank);
    const Batch batch = source.samples(mine.begin, mine.end, at::kDouble, at::kCPU);
    engine.backward(model->loss_sum(batch) / static_cast<double>(batch.items));
    if (plan.zero_stage == 3) {
      // Released after backward: only the shards remain.
      for (const at::Tensor& parameter : engine.parameters()) {
        EXPECT_EQ(storage_bytes({parameter}), 0) << "a stage 3 parameter stayed gathered";
      }
    }
    engine.step();
  }
  run.parameters = engine.gather_full_parameters();
  return run;
}

class ZeroEngineAcrossRanks : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { communicator_ = make_mpi_communicator(); }
  std::unique_ptr<Communicator> communicator_;
};

TEST_P(ZeroEngineAcrossRanks, MatchesOneRankAndTheZeroFormulas) {
  const int64_t stage = GetParam();
  const int64_t ranks = communicator_->world_size();
  const TrainingRun zero = train(plan_for(stage, kMicroBatch, ranks), communicator_.get());
  // One rank, no ZeRO, each micro-batch the union of the ranks' micro-batches.
  const TrainingRun reference = train(plan_for(0, kMicroBatch * ranks, 1), nullptr);
  ASSERT_EQ(zero.parameters.size(), reference.parameters.size());
  for (size_t i = 0; i < zero.parameters.size(); ++i) {
    EXPECT_LT((zero.parameters[i] - reference.parameters[i]).abs().max().item<double>(), 1e-12)
        << "parameter " << i << " at stage " << stage;
  }

  ASSERT_EQ(zero.events.size(), static_cast<size_t>(kSteps));
  int64_t numel = 0;
  for (const at::Tensor& parameter : zero.parameters) numel += parameter.numel();
  int64_t padded = numel;
  if (stage >= 1 && stage <= 2) padded = (numel + ranks - 1) / ranks * ranks;
  if (stage == 3) {
    padded = 0;
    for (const at::Tensor& parameter : zero.parameters) {
      padded += (parameter.numel() + ranks - 1) / ranks * ranks;
    }
  }
  const ModelStateBytes expected =
      expected_model_states(stage, ranks, padded, BytesPerParameter{8, 8, 16});
  const ModelStateBytes& held = zero.events.back().model_states;  // after Adam's state exists
  EXPECT_EQ(held.parameters, expected.parameters);
  EXPECT_EQ(held.gradients, expected.gradients);
  EXPECT_EQ(held.optimizer_states, expected.optimizer_states);

  // Plus one all-reduced float64 for the clipping norm where gradients are partitioned.
  const int64_t norm_bytes = stage >= 1 ? 2 * 8 * (ranks - 1) / ranks : 0;
  EXPECT_EQ(zero.events.back().ring_bytes,
            expected_ring_bytes_per_step(stage, ranks, kGas, padded * 8) + norm_bytes);
}

INSTANTIATE_TEST_SUITE_P(Stages, ZeroEngineAcrossRanks, ::testing::Values(0, 1, 2, 3));

// Live CPU tensor bytes that one forward adds: the activations autograd keeps, plus whatever
// parameters stay gathered until backward.
int64_t bytes_added_by_forward(const ModelSpec& model_spec, int64_t stage,
                               Communicator* communicator) {
  const int64_t ranks = communicator->world_size();
  auto model = build_model(model_spec, at::kDouble, at::kCPU);
  ReferenceEngine engine(model, plan_for(stage, kMicroBatch, ranks), communicator);
  const int64_t first = communicator->rank() * kMicroBatch;
  const Batch batch = SampleSource(DataSpec{"classification", ClassificationData{64, 8}, 13})
                          .samples(first, first + kMicroBatch, at::kDouble, at::kCPU);
  const int64_t before = CountingCpuAllocator::stats().live_bytes;
  const at::Tensor loss = model->loss_sum(batch) / static_cast<double>(batch.items);
  const int64_t added = CountingCpuAllocator::stats().live_bytes - before;
  engine.backward(loss);  // every rank takes part in the same collectives
  engine.step();
  return added;
}

class ZeroStageThreeAcrossRanks : public ::testing::Test {
 protected:
  void SetUp() override { communicator_ = make_mpi_communicator(); }
  std::unique_ptr<Communicator> communicator_;
};

TEST_F(ZeroStageThreeAcrossRanks, HoldsNoGatheredWeightsBetweenForwardAndBackward) {
  const ModelSpec model{{"mlp", MlpOptions{{64, 256, 256, 8}, Activation::gelu}, 14}};
  const int64_t parameter_bytes = (64 * 256 + 256 + 256 * 256 + 256 + 256 * 8 + 8) * 8;
  CountingCpuAllocator::install();
  const int64_t stage0 = bytes_added_by_forward(model, 0, communicator_.get());
  const int64_t stage3 = bytes_added_by_forward(model, 3, communicator_.get());
  CountingCpuAllocator::uninstall();
  // Had autograd kept views of the weights, stage 3 would hold the whole model here.
  EXPECT_LT(stage3 - stage0, parameter_bytes / 10)
      << "stage 0 forward added " << stage0 << " bytes, stage 3 " << stage3;
}

}  // namespace
}  // namespace trainrepro
