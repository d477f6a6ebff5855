// The Python workers (the real DeepSpeed, PyTorch's FSDP2) as engines under test: what each
// can express, the job it is handed (the scenario's config and loop, the golden's weights and
// samples), and what both share as engines: they start their own ranks, train the module in
// float32, and read the worker's trace in the reference engine's form, for the same judges.
#pragma once
#include <optional>
#include <string>
#include <variant>

#include "harness/engines/training_engine.h"
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

// What the DeepSpeed and FSDP2 engines share.
class WorkerTrainingEngine : public TrainingEngine {
 public:
  explicit WorkerTrainingEngine(DeepSpeedPython python) : python_(std::move(python)) {}
  std::string description() const override { return engine_description(python_.versions); }
  bool starts_own_ranks() const override { return true; }
  // The worker trains the float32 module the user hands it: a float64 scenario is judged with
  // float32 tolerances there (the golden stays float64).
  Plan plan_trained(const Scenario& scenario, Plan plan,
                    std::vector<std::string>& warnings) const override;

 protected:
  // A worker engine skips what it cannot run (the scenario is not wrong: this engine lacks
  // it): `reason` as a skipped verdict, or nothing when there is none.
  static std::optional<Verdict> skipped_for(std::optional<std::string> reason);

  // Trains `job` on the worker: its trace (initial parameters from the golden, memory as its
  // census counts it), or the verdict that takes training's place (skipped: the engine's
  // reason; failed: DeepSpeed refused a config the release model accepts; error: the worker's
  // failure). `title` names the engine in errors ("DeepSpeed", "FSDP2").
  std::variant<Trace, Verdict> train_job(const Scenario& scenario, const Golden& golden,
                                         nlohmann::json job, const std::string& title,
                                         int timeout_seconds,
                                         WorkerSets* worker_sets = nullptr) const;

  DeepSpeedPython python_;
};

// The two workers as engines (python.versions.engine says which one worker_training_engine
// chooses).
std::shared_ptr<const TrainingEngine> deepspeed_worker_engine(DeepSpeedPython python);
std::shared_ptr<const TrainingEngine> fsdp2_worker_engine(DeepSpeedPython python);

}  // namespace trainrepro
