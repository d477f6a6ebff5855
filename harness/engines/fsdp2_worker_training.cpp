// PyTorch's FSDP2 as the engine under test (`run --engine fsdp2`): it reads no DeepSpeed config,
// reduces at every synced backward rather than at an engine's boundary, and explains the
// verdicts where DeepSpeed's engine, not the loop, made a habit harmful (fsdp2_difference.h).
#include "harness/engines/fsdp2_difference.h"
#include "harness/engines/worker_training.h"
#include "harness/verdict/judge_config.h"

namespace trainrepro {
namespace {

class Fsdp2WorkerEngine : public WorkerTrainingEngine {
 public:
  using WorkerTrainingEngine::WorkerTrainingEngine;

  // FSDP2 reads no ds_config: what DeepSpeed's config rules say is not FSDP2's to show.
  std::optional<std::string> skips_config_verdict(const Scenario& scenario,
                                                  const PlanResolution& resolution) const override {
    const auto* refused = std::get_if<ConfigError>(&resolution);
    if (refused && (refused->kind == ConfigErrorKind::no_sync_with_partitioned_gradients ||
                    refused->kind == ConfigErrorKind::no_sync_boundary_at_zero_stage_1)) {
      return "skipped: --engine fsdp2: the refusal is DeepSpeed's engine.no_sync() at ZeRO "
             "stage " +
             std::to_string(scenario.deepspeed.zero_stage) + " (" +
             describe_expectation(scenario.expect) +
             "); FSDP2's set_requires_gradient_sync refuses nothing, and its outcome is the same "
             "at every stage: the stage-0 scenarios of loop.gradient_sync show it";
    }
    return "skipped: --engine fsdp2: no FSDP2 counterpart: the verdict is on the DeepSpeed "
           "config itself (" +
           describe_expectation(scenario.expect) + "), which FSDP2 does not read";
  }

  std::optional<Verdict> refusal(const Scenario& scenario, const Plan& plan) const override {
    return skipped_for(unsupported_by_fsdp2_worker(scenario, plan));
  }

  std::variant<Trace, Verdict> train(const Scenario& scenario, const Plan& plan,
                                     const Golden& golden,
                                     const TrainingContext& context) const override {
    auto trained = train_job(scenario, golden, fsdp2_job(scenario, plan, golden), "FSDP2",
                             context.timeout_seconds, context.worker_sets);
    // torch 2.11, _fsdp_param_group.py: only a backward with gradient sync on reduce-scatters,
    // into the sharded .grad the optimizer holds; FSDP2 keeps the model's dtype in them.
    if (auto* trace = std::get_if<Trace>(&trained)) {
      trace->gradient_reduction = GradientReduction::at_each_synced_backward;
    }
    return trained;
  }

  std::optional<std::string> explain_verdict(const Scenario& scenario,
                                             const Verdict& verdict) const override {
    return fsdp2_difference(scenario, verdict);
  }
};

}  // namespace

std::shared_ptr<const TrainingEngine> fsdp2_worker_engine(DeepSpeedPython python) {
  return std::make_shared<Fsdp2WorkerEngine>(std::move(python));
}

}  // namespace trainrepro
