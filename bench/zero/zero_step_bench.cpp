// The engine's training step at world size 2 against world size 1 with the same per-rank work,
// for each ZeRO stage, in one run under `mpirun -np 2` (scripts/bench starts it). Both ranks run
// every benchmark in lockstep (fixed iteration counts, so collectives line up): the world-size-1
// variant trains each rank's model alone, so CPU contention is the same in both. Counters split
// the world-size-2 step into compute (forward, backward, optimizer), communication (time blocked
// in collectives) and partition bookkeeping (flattening, padding, copying shards, gathering
// into parameters). Only rank 0 reports.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "harness/distributed/communicator.h"
#include "harness/distributed/mpi_session.h"
#include "harness/engine/reference_engine.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

Communicator* g_communicator = nullptr;

constexpr int64_t kMicroBatch = 16;
const ModelSpec kModel{{"mlp", MlpOptions{{256, 512, 512, 10}, Activation::gelu}, 3}};
const DataSpec kData{"classification", ClassificationData{256, 10}, 4};

void BM_ZeroStep(benchmark::State& state, bool across_ranks, int64_t stage) {
  const int64_t ranks = across_ranks ? g_communicator->world_size() : 1;
  Plan plan;
  plan.batch = {kMicroBatch * ranks, kMicroBatch, 1, ranks, {}};
  plan.zero_stage = stage;
  plan.optimizer.kind = OptimizerKind::adamw;
  plan.optimizer.lr = 1e-4;
  auto model = build_model(kModel, at::kFloat, at::kCPU);
  ReferenceEngine engine(model, plan, across_ranks ? g_communicator : nullptr);
  const int64_t first = g_communicator->rank() * kMicroBatch;
  const Batch batch = SampleSource(kData).samples(first, first + kMicroBatch, at::kFloat, at::kCPU);

  const double collective_before = g_communicator->collective_seconds();
  const double partition_before = engine.partition_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    engine.backward(model->loss_sum(batch) / static_cast<double>(batch.items));
    engine.step();
  }
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double communication = g_communicator->collective_seconds() - collective_before;
  const double partition = engine.partition_seconds() - partition_before;
  const auto per_step_ms = [&](double seconds) {
    return benchmark::Counter(seconds * 1e3 / static_cast<double>(state.iterations()));
  };
  state.counters["compute_ms"] = per_step_ms(total - partition);
  state.counters["communication_ms"] = per_step_ms(communication);
  state.counters["bookkeeping_ms"] = per_step_ms(partition - communication);
}

// Fixed iterations: every rank must make the same number of collective calls.
#define TRAINREPRO_ZERO_STEP(stage)                                 \
  BENCHMARK_CAPTURE(BM_ZeroStep, world1_stage##stage, false, stage) \
      ->Iterations(200)                                             \
      ->UseRealTime();                                              \
  BENCHMARK_CAPTURE(BM_ZeroStep, world2_stage##stage, true, stage)->Iterations(200)->UseRealTime()
TRAINREPRO_ZERO_STEP(0);
TRAINREPRO_ZERO_STEP(1);
TRAINREPRO_ZERO_STEP(2);
TRAINREPRO_ZERO_STEP(3);

}  // namespace
}  // namespace trainrepro

int main(int argc, char** argv) {
  at::set_num_threads(1);
  std::unique_ptr<trainrepro::Communicator> communicator = trainrepro::make_mpi_communicator();
  trainrepro::g_communicator = communicator.get();
  // Every rank runs the benchmarks; only rank 0 prints and writes --benchmark_out.
  std::vector<char*> arguments(argv, argv + argc);
  if (communicator->rank() != 0) {
    std::freopen("/dev/null", "w", stdout);
    std::vector<char*> kept;
    for (char* argument : arguments) {
      if (std::strncmp(argument, "--benchmark_out", 15) != 0) kept.push_back(argument);
    }
    arguments = kept;
  }
  int count = static_cast<int>(arguments.size());
  benchmark::Initialize(&count, arguments.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  communicator->barrier();
  return 0;
}
