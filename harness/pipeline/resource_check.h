// What a scenario will take, estimated from its plan before anything is allocated, and the
// refusal of what this machine cannot give: a model of 40 GB, a micro batch of 2^38 samples, a
// billion steps or 64 ranks on 2 cores once crashed with a backtrace, ran into the OOM killer or
// spawned 66 processes. The estimate is generous (an upper bound of the same order), so a
// scenario that fits is never refused; `run --allow-large` runs a refused one anyway.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

struct MachineCapacity {
  int64_t ram_bytes = 0;
  int64_t gpu_bytes = 0;  // one GPU's memory; 0 without CUDA
  int64_t cores = 1;
  // The longest a scenario may train. Its time is estimated at speeds no machine of its kind
  // exceeds (kFastest*), so only work that surely takes longer is refused.
  double time_budget_seconds = 3600.0;
};

// Speeds above what a rank reaches (one LibTorch thread on a CPU core; one H200 in bf16, dense),
// and the least a micro-step costs beside its arithmetic (engine, loop, probes): the time
// estimate is a lower bound.
constexpr double kFastestCpuRankFlops = 100e9;
constexpr double kFastestCudaRankFlops = 1000e12;
constexpr double kLeastSecondsPerMicroStep = 20e-6;

// Ranks per core beyond which a scenario is refused: the suite's 4-rank scenarios run on 1 core
// (slowly); 64 ranks on 2 cores only thrash.
constexpr int64_t kRanksPerCore = 4;

struct ResourceEstimate {
  double model_state_bytes = 0;  // per rank: parameters, gradients, optimizer states
  double activation_bytes = 0;   // per rank: one micro-batch's data and what backward keeps
  double recorded_bytes = 0;     // per rank: the golden read from its file, the recorded copies
  double bookkeeping_bytes = 0;  // per rank: per-micro-step records and memory samples
  int64_t parameters = 0;
  int64_t processes = 1;  // the ranks, and mpirun when there are several
  // Training arithmetic (6 FLOPs per parameter and token: forward and backward), per rank.
  double run_flops = 0;     // the run: loop.steps windows of GAS micro-batches
  double golden_flops = 0;  // the golden: golden.steps batches of the intended size, one rank
  int64_t run_micro_steps = 0;
  double run_seconds = 0;     // at least, at the fastest speed (see kFastest*)
  double golden_seconds = 0;  // at least, on the CPU
};

ResourceEstimate estimate_resources(const Scenario& scenario, const Plan& plan);

// What the refusal is for: `run` trains the run (the golden is read from its file), `golden
// --update` trains the golden.
enum class ResourceUse { run, golden_update };

// The refusal, starting with `file:/pointer` of what dominates and saying what the scenario
// would need; std::nullopt when it fits.
std::optional<std::string> refuse_beyond_machine(const Scenario& scenario, const Plan& plan,
                                                 const MachineCapacity& machine,
                                                 ResourceUse use = ResourceUse::run);

}  // namespace trainrepro
