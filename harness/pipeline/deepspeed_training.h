// The training stage on the real DeepSpeed (`run --engine deepspeed`): what this slice of the
// worker can express, the job it is handed (the scenario's config and loop, the golden's weights
// and samples), and its trace in the reference engine's form, for the same judges.
#pragma once
#include <optional>
#include <string>
#include <variant>

#include "harness/golden/golden.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"
#include "harness/verdict/verdict.h"
#include "harness/worker/deepspeed_worker.h"

namespace trainrepro {

// Why the DeepSpeed worker does not run this scenario yet (the reason of a skip), or nothing.
std::optional<std::string> unsupported_by_deepspeed_worker(const Scenario& scenario,
                                                           const Plan& plan);

// Why the FSDP2 worker (python/trainrepro_worker/fsdp2_worker.py) does not run this scenario:
// what has no FSDP2 counterpart (DeepSpeed's own optimizers, schedulers and loss scaling, its
// Trainer loop, habits around its engine) or is not yet mapped (bf16, offload), or nothing.
std::optional<std::string> unsupported_by_fsdp2_worker(const Scenario& scenario, const Plan& plan);

// The job python/trainrepro_worker/ds_worker.py trains: the scenario's DeepSpeed config
// verbatim, its loop, parameter groups and client optimizer as written, the golden's model and
// data (defaults filled) and its file and trainable parameters.
nlohmann::json deepspeed_job(const Scenario& scenario, const Golden& golden);

// deepspeed_job plus what FSDP2 needs resolved with DeepSpeed's rules ("fsdp2": batch sizes,
// clipping, ZeRO stage, the optimizer with its defaults), since FSDP2 reads no ds_config.
nlohmann::json fsdp2_job(const Scenario& scenario, const Plan& plan, const Golden& golden);

// Trains the scenario on DeepSpeed (or FSDP2, when python.versions.engine says so): its trace (initial parameters from the golden, memory not
// measured), or the verdict that takes training's place (skipped: DeepSpeed's reason; failed:
// DeepSpeed refused a config the release model accepts; error: the worker's failure).
std::variant<Trace, Verdict> train_on_deepspeed(const Scenario& scenario, const Plan& plan,
                                                const Golden& golden,
                                                const DeepSpeedPython& python, int timeout_seconds);

}  // namespace trainrepro
