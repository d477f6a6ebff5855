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
};

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
};

ResourceEstimate estimate_resources(const Scenario& scenario, const Plan& plan);

// The refusal, starting with `file:/pointer` of what dominates and saying what the scenario
// would need; std::nullopt when it fits.
std::optional<std::string> refuse_beyond_machine(const Scenario& scenario, const Plan& plan,
                                                 const MachineCapacity& machine);

}  // namespace trainrepro
