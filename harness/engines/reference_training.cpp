// The reference engine (engine/, trained by loop/'s training loop) as the engine under test:
// what it does not implement, said plainly rather than run approximately, and its training.
#include <nlohmann/json.hpp>

#include "harness/engine/reference_engine.h"
#include "harness/engine/runtime_info.h"
#include "harness/engines/training_engine.h"
#include "harness/loop/training_loop.h"
#include "models/model_size.h"
#include "models/torchscript_model.h"

namespace trainrepro {
namespace {

// What this engine cannot run yet, said plainly rather than run approximately.
std::optional<std::string> unsupported_by_reference_engine(const Scenario& scenario,
                                                           const Plan& plan) {
  // At ZeRO stages 1-3 gradients and optimizer state live in the engine's partitions, so a
  // loop that works on .grad or the optimizer behind the engine's back has no single meaning.
  const LoopSpec& loop = scenario.loop;
  const char* around_engine = nullptr;
  // From DeepSpeed 0.18.3 loss.backward() after engine(x) is hooked: the engine's own path.
  if (loop.loss_scaling == LossScalingHabit::none && !plan.direct_backward_through_engine) {
    around_engine = "/loop/loss_scaling";
  }
  // zero_grad every micro-step is engine.zero_grad(), whose effect each stage defines
  // (ZeroStrategy::clear_parameter_gradients); "never" steps the optimizer behind the engine.
  if (loop.zero_grad == ZeroGradHabit::never) around_engine = "/loop/zero_grad";
  if (loop.stepping == SteppingHabit::optimizer_every_micro_step) around_engine = "/loop/stepping";
  if (loop.evaluation && loop.evaluation->backward) around_engine = "/loop/evaluation/backward";
  if (loop.clip_grad_norm > 0.0) around_engine = "/loop/clip_grad_norm";
  if (plan.zero_stage > 0 && around_engine != nullptr) {
    return scenario.file + ":" + around_engine +
           ": this loop habit works on gradients or the optimizer around the engine, which the "
           "reference engine supports at ZeRO stage 0 only (this scenario uses stage " +
           std::to_string(plan.zero_stage) + ")";
  }
  // Your TorchScript module's forward is one graph: nothing inside it can be hooked per layer.
  if (std::holds_alternative<TorchScriptOptions>(scenario.model.options)) {
    if (plan.zero_stage == 3) {
      return scenario.file +
             ":/deepspeed/zero_optimization/stage: ZeRO stage 3 gathers each "
             "submodule's parameters around that submodule's forward and backward; a TorchScript "
             "module's forward is one compiled graph with no submodule boundaries to gather at, "
             "so the reference engine runs it at stages 0-2 only";
    }
    if (loop.activation_checkpointing != ActivationCheckpointing::none) {
      return scenario.file +
             ":/loop/activation_checkpointing: checkpointing lives in your "
             "model's code, and a TorchScript module's graph cannot be split into checkpointed "
             "blocks from outside; trace the model with its checkpointing, or remove this key";
    }
  }
  if (!scenario.deepspeed.precision_not_implemented.empty()) {
    return scenario.deepspeed.precision_not_implemented;
  }
  if (plan.precision != Precision::fp32 && plan.dtype == EngineDtype::float64) {
    return scenario.file + ":/dtype: float64 with " + precision_name(plan.precision) +
           ": DeepSpeed casts the model to " + precision_name(plan.precision) +
           " and keeps float32 master weights, so a mixed-precision scenario runs in float32 "
           "(remove \"dtype\"; the golden stays float64)";
  }
  // Stage 3 hands FusedLamb one flat float32 partition per sub group of sub_group_size elements
  // (1e9 by default); the engine's stage 3 keeps one per param group, which is the same while a
  // group fits in one sub group. Smaller sub groups would split Lamb's trust ratio further.
  if (plan.optimizer.kind == OptimizerKind::lamb && plan.zero_stage == 3) {
    const nlohmann::json& zero =
        scenario.deepspeed.verbatim.value("zero_optimization", nlohmann::json::object());
    if (zero.is_object() && zero.contains("sub_group_size") && zero["sub_group_size"].is_number() &&
        zero["sub_group_size"].get<double>() <
            static_cast<double>(parameter_count(scenario.model.options))) {
      return scenario.file +
             ":/deepspeed/zero_optimization/sub_group_size: Lamb at ZeRO stage "
             "3 with sub groups smaller than the model (" +
             std::to_string(parameter_count(scenario.model.options)) +
             " parameters) is not implemented by the reference engine: DeepSpeed gives FusedLamb "
             "one flat partition per sub group, so its trust ratio would span each sub group";
    }
  }
  return std::nullopt;
}

class ReferenceTrainingEngine : public TrainingEngine {
 public:
  std::string description() const override { return kReferenceEngine; }

  // A scenario it cannot express is the scenario's error: the reference engine is the one
  // every scenario is written for.
  std::optional<Verdict> refusal(const Scenario& scenario, const Plan& plan) const override {
    auto reason = unsupported_by_reference_engine(scenario, plan);
    if (!reason) return std::nullopt;
    Verdict verdict;
    verdict.outcome = Outcome::error;
    verdict.error_source = ErrorSource::scenario;
    verdict.found = std::move(*reason);
    return verdict;
  }

  std::variant<Trace, Verdict> train(const Scenario& scenario, const Plan& plan,
                                     const Golden& golden,
                                     const TrainingContext& context) const override {
    if (plan.device == Device::cuda) make_cuda_deterministic();
    LoopOptions loop_options;
    loop_options.recorded_steps = scenario.golden.steps;
    loop_options.communicator = context.communicator;
    return run_training_loop(scenario.model, scenario.data, scenario.loop, plan, loop_options);
  }
};

}  // namespace

std::shared_ptr<const TrainingEngine> reference_training_engine() {
  static const std::shared_ptr<const TrainingEngine> engine =
      std::make_shared<ReferenceTrainingEngine>();
  return engine;
}

}  // namespace trainrepro
