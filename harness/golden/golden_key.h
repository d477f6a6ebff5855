// The golden's key: everything that determines its numbers — model, data, optimizer, clipping,
// the intended batch and the number of steps — and nothing else. Scenarios that differ only in
// the user's loop or DeepSpeed batch keys (a bug and its fixed twin) share one golden.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

constexpr int kGoldenFormatVersion = 1;

nlohmann::json golden_key(const Scenario& scenario);

// "mlp-classification-tb32-s4-1a2b3c4d5e6f.safetensors": readable, and unique by key hash.
std::string golden_file_name(const nlohmann::json& key);

// The plan the golden runs: one rank, float64 on CPU, one batch of the intended size, no
// accumulation, the scenario's optimizer and clipping.
Plan golden_plan(const Scenario& scenario);

// The precision twin of a fp16/bf16 run (precision_config.h): the golden plan in the run's
// precision — float32 master weights, the run's loss scaling, one rank, no accumulation.
Plan precision_twin_plan(const Scenario& scenario, const Plan& run);

// The correct loop for golden.steps steps.
LoopSpec golden_loop(const Scenario& scenario);

}  // namespace trainrepro
