// The engine under test behind one seam: what it refuses, how it trains a scenario into a
// Trace, and what it says about its own results. Chosen once, from `--engine`; the pipeline asks
// it and never its name, and the judges read only the Trace it makes (which carries what they
// need to know about the engine: how it reduced gradients, what it holds).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness/distributed/communicator.h"
#include "harness/golden/golden.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"
#include "harness/verdict/verdict.h"
#include "harness/worker/deepspeed_worker.h"

namespace trainrepro {

struct TrainingContext {
  int timeout_seconds = 600;             // a worker that takes longer is killed
  Communicator* communicator = nullptr;  // this rank's, when ranks were launched; else none
  // `run`'s worker sets (the default): the worker ranks kept across scenarios; none: fresh
  // ranks for every scenario.
  WorkerSets* worker_sets = nullptr;
};

class TrainingEngine {
 public:
  virtual ~TrainingEngine() = default;

  // How results name it: "reference", "deepspeed 0.19.8 (torch 2.11.0, python 3.11.7)", …
  virtual std::string description() const = 0;
  // The DeepSpeed release that trains, when DeepSpeed itself does: a scenario's release
  // expectations and the defaults that changed since the judging release follow it. Empty
  // when DeepSpeed's rules only judge.
  virtual std::string deepspeed_release() const { return ""; }
  // Starts one process per rank itself (the Python workers meet through gloo): the pipeline
  // neither launches ranks nor needs Open MPI for it.
  virtual bool starts_own_ranks() const { return false; }

  // A scenario this engine must not be handed at all, refused before anything else (exit 2).
  virtual std::optional<std::string> refusal_before_run(const Scenario& scenario) const {
    return std::nullopt;
  }
  // Why a scenario DeepSpeed's config rules judge is skipped here (an engine that reads no
  // DeepSpeed config has nothing to show of them), or nothing: the config's verdict stands.
  virtual std::optional<std::string> skips_config_verdict(const Scenario& scenario,
                                                          const PlanResolution& resolution) const {
    return std::nullopt;
  }
  // What it does not train: the verdict that takes training's place, or nothing.
  virtual std::optional<Verdict> refusal(const Scenario& scenario, const Plan& plan) const = 0;
  // The plan it trains: the resolved one, or one it changes (saying why in `warnings`).
  virtual Plan plan_trained(const Scenario& scenario, Plan plan,
                            std::vector<std::string>& warnings) const {
    return plan;
  }
  // Trains the scenario from the golden's weights and samples: its trace, or the verdict that
  // takes training's place. May throw (UserModelError, c10::Error, std::exception): the
  // pipeline turns that into a result.
  virtual std::variant<Trace, Verdict> train(const Scenario& scenario, const Plan& plan,
                                             const Golden& golden,
                                             const TrainingContext& context) const = 0;
  // Its own explanation of a verdict that differs from what DeepSpeed's semantics give the
  // scenario (said instead of the diagnosis), or nothing.
  virtual std::optional<std::string> explain_verdict(const Scenario& scenario,
                                                     const Verdict& verdict) const {
    return std::nullopt;
  }
};

// The C++ LibTorch engine (the default): engine/, trained by loop/'s training loop.
std::shared_ptr<const TrainingEngine> reference_training_engine();

// The Python worker of `python` (python.versions.engine: "deepspeed" or "fsdp2"), the one choice.
std::shared_ptr<const TrainingEngine> worker_training_engine(DeepSpeedPython python);

// `--engine`'s choice: the reference engine when no Python was found for a worker.
std::shared_ptr<const TrainingEngine> training_engine_for(
    const std::optional<DeepSpeedPython>& python);

}  // namespace trainrepro
