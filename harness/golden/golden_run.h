// Computes a scenario's golden by running the reference engine on the golden plan: one rank,
// float64, CPU, one batch of the intended train_batch_size per step, no accumulation.
// Only `trainrepro golden --update` calls this; `run` only reads goldens.
#pragma once
#include "harness/golden/golden.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

Golden compute_golden(const Scenario& scenario);

}  // namespace trainrepro
