// One optimizer step (GAS=4 micro-batches of 8) on the MLP through the reference engine, against
// a hand-written LibTorch loop doing the same work on the same model with the same optimizer.
// Target: engine / hand-written <= 1.05 (compare the two rows of one run; never absolute times).
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>

#include "harness/engine/optimizer.h"
#include "harness/engine/reference_engine.h"
#include "harness/memory/counting_cpu_allocator.h"
#include "harness/memory/memory_probe.h"
#include "models/sample_source.h"
#include "models/zoo_model.h"

namespace trainrepro {
namespace {

constexpr int64_t kGas = 4;
constexpr int64_t kMicroBatch = 8;

struct Setup {
  ModelSpec model{{"mlp", MlpOptions{{16, 64, 4}, Activation::relu}, 1}};
  DataSpec data{"classification", ClassificationData{16, 4}, 2};
  Plan plan;
  std::vector<Batch> batches;

  Setup() {
    plan.batch = {kGas * kMicroBatch, kMicroBatch, kGas, 1, {}};
    plan.optimizer.kind = OptimizerKind::adamw;
    SampleSource source(data);
    for (int64_t m = 0; m < kGas; ++m) {
      batches.push_back(
          source.samples(m * kMicroBatch, (m + 1) * kMicroBatch, at::kFloat, at::kCPU));
    }
  }
};

void BM_HandWrittenLoopStep(benchmark::State& state) {
  Setup setup;
  auto model = build_model(setup.model, at::kFloat, at::kCPU);
  std::vector<at::Tensor> parameters = model->parameters();
  Optimizer optimizer(setup.plan.optimizer);
  for (auto _ : state) {
    for (const Batch& batch : setup.batches) {
      const at::Tensor loss = model->loss_sum(batch) / static_cast<double>(batch.items);
      (loss / static_cast<double>(kGas)).backward();
    }
    optimizer.step(parameters);
    for (at::Tensor& parameter : parameters) parameter.mutable_grad().reset();
  }
}
BENCHMARK(BM_HandWrittenLoopStep);

void BM_ReferenceEngineStep(benchmark::State& state) {
  Setup setup;
  auto model = build_model(setup.model, at::kFloat, at::kCPU);
  ReferenceEngine engine(model, setup.plan);
  for (auto _ : state) {
    for (const Batch& batch : setup.batches) {
      engine.backward(model->loss_sum(batch) / static_cast<double>(batch.items));
      engine.step();
    }
  }
}
BENCHMARK(BM_ReferenceEngineStep);

}  // namespace
}  // namespace trainrepro

namespace trainrepro {
namespace {

// The same engine step with memory probing as a run does it: the counting CPU allocator
// installed, a sample at the end of every micro-step and at the boundary.
// Target: with probes / without (BM_ReferenceEngineStep) <= 1.02.
void BM_ReferenceEngineStepWithProbes(benchmark::State& state) {
  Setup setup;
  MemoryProbe probe(Device::cpu, 0);  // installs the counting allocator; keeps no samples
  auto model = build_model(setup.model, at::kFloat, at::kCPU);
  ReferenceEngine engine(model, setup.plan);
  int64_t micro_step = 0;
  for (auto _ : state) {
    for (const Batch& batch : setup.batches) {
      engine.backward(model->loss_sum(batch) / static_cast<double>(batch.items));
      engine.step();
      probe.sample(SamplePoint::micro_step, micro_step++, 0);
    }
    probe.sample(SamplePoint::boundary, micro_step, 0);
  }
  CountingCpuAllocator::uninstall();
}
BENCHMARK(BM_ReferenceEngineStepWithProbes);

}  // namespace
}  // namespace trainrepro
