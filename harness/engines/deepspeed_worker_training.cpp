// The real DeepSpeed as the engine under test (`run --engine deepspeed`, `deepspeed==VERSION`):
// its release decides what a scenario's release list expects, the config is checked once before
// DeepSpeed is handed it, and under bf16 it hands the loop bf16 parameters.
#include "harness/engines/worker_training.h"
#include "harness/scenario/settings_acting_outside_the_run.h"

namespace trainrepro {
namespace {

class DeepSpeedWorkerEngine : public WorkerTrainingEngine {
 public:
  using WorkerTrainingEngine::WorkerTrainingEngine;

  std::string deepspeed_release() const override { return python_.versions.deepspeed; }

  // The one check of a config handed to the real DeepSpeed (run, bisect's probes, the release
  // matrix): refused before a golden is read or a worker starts.
  std::optional<std::string> refusal_before_run(const Scenario& scenario) const override {
    return refuse_settings_acting_outside_the_run(scenario, "--engine deepspeed");
  }

  std::optional<Verdict> refusal(const Scenario& scenario, const Plan& plan) const override {
    return skipped_for(unsupported_by_deepspeed_worker(scenario, plan));
  }

  std::variant<Trace, Verdict> train(const Scenario& scenario, const Plan& plan,
                                     const Golden& golden,
                                     const TrainingContext& context) const override {
    auto trained = train_job(scenario, golden, deepspeed_job(scenario, golden), "DeepSpeed",
                             context.timeout_seconds, context.worker_sets);
    // DeepSpeed trains the module in bf16 under bf16 (float32 master weights beside it): what
    // GatheredParameters hands the loop is bf16.
    if (auto* trace = std::get_if<Trace>(&trained); trace && plan.precision != Precision::fp32) {
      trace->gathered_parameter_element_bytes = 2;
    }
    return trained;
  }
};

}  // namespace

std::shared_ptr<const TrainingEngine> deepspeed_worker_engine(DeepSpeedPython python) {
  return std::make_shared<DeepSpeedWorkerEngine>(std::move(python));
}

}  // namespace trainrepro
