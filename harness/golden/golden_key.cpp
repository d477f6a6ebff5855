#include "harness/golden/golden_key.h"

#include "harness/files/sha256.h"
#include "models/options_json.h"

namespace trainrepro {

nlohmann::json golden_key(const Scenario& scenario) {
  const OptimizerConfig& optimizer = *scenario.deepspeed.optimizer;
  nlohmann::json optimizer_json = {
      {"type", spelling_of(optimizer.kind, optimizer_spellings())},
      {"lr", optimizer.lr},
      {"weight_decay", optimizer.weight_decay},
  };
  if (optimizer.kind == OptimizerKind::sgd) {
    optimizer_json["momentum"] = optimizer.momentum;
    optimizer_json["dampening"] = optimizer.dampening;
    optimizer_json["nesterov"] = optimizer.nesterov;
  } else {
    optimizer_json["betas"] = {optimizer.beta1, optimizer.beta2};
    optimizer_json["eps"] = optimizer.eps;
    optimizer_json["decoupled_weight_decay"] = optimizer.decoupled_weight_decay;
  }
  // Only when set, so that goldens written before parameter groups existed keep their keys.
  if (optimizer.decay_skips_bias_and_norm) optimizer_json["decay_skips_bias_and_norm"] = true;
  for (const ParameterGroup& group : optimizer.parameter_groups) {
    nlohmann::json group_json = {{"names", group.names}, {"weight_decay", group.weight_decay}};
    if (group.lr != optimizer.lr) group_json["lr"] = group.lr;  // only when its own
    optimizer_json["parameter_groups"].push_back(group_json);
  }
  if (optimizer.kind == OptimizerKind::lamb) {
    optimizer_json["bias_correction"] = optimizer.bias_correction;
    optimizer_json["max_coeff"] = optimizer.max_coeff;
    optimizer_json["min_coeff"] = optimizer.min_coeff;
    optimizer_json["eps_inside_sqrt"] = optimizer.eps_inside_sqrt;
  }
  nlohmann::json key = {
      {"format_version", kGoldenFormatVersion},
      {"model",
       {{"name", scenario.model.name},
        {"options", model_options_to_json(scenario.model.options)},
        {"seed", scenario.model.seed}}},
      {"data",
       {{"name", scenario.data.name},
        {"options", data_options_to_json(scenario.data.options)},
        {"seed", scenario.data.seed}}},
      {"optimizer", optimizer_json},
      {"gradient_clipping", scenario.deepspeed.gradient_clipping},
      {"train_batch_size", scenario.golden.train_batch_size},
      {"steps", scenario.golden.steps},
  };
  // Frozen parameters change every gradient and which parameters the golden records; only when
  // some are, so that goldens written before they existed keep their keys.
  if (!scenario.model.frozen.empty()) key["model"]["frozen"] = scenario.model.frozen;
  // Only when there is one, so that goldens written before schedulers existed keep their keys.
  if (scenario.deepspeed.scheduler) {
    key["lr_schedule"] = lr_schedule_to_json(*scenario.deepspeed.scheduler);
  }
  return key;
}

std::string golden_file_name(const nlohmann::json& key) {
  // nlohmann::json objects are key-sorted, so dump() is canonical.
  const std::string hash = sha256_hex(key.dump()).substr(0, 12);
  return key["model"]["name"].get<std::string>() + "-" + key["data"]["name"].get<std::string>() +
         "-tb" + std::to_string(key["train_batch_size"].get<int64_t>()) + "-s" +
         std::to_string(key["steps"].get<int64_t>()) + "-" + hash + ".safetensors";
}

Plan golden_plan(const Scenario& scenario) {
  Plan plan;
  const int64_t batch = scenario.golden.train_batch_size;
  plan.batch = {batch, batch, /*gradient_accumulation_steps=*/1, /*world_size=*/1, {}};
  plan.device = Device::cpu;
  plan.dtype = EngineDtype::float64;
  plan.precision = Precision::fp32;
  plan.zero_stage = 0;
  plan.optimizer = *scenario.deepspeed.optimizer;
  plan.lr_schedule = scenario.deepspeed.scheduler;
  // The golden follows the schedule as documented, not a release's bug in applying it.
  if (plan.lr_schedule) plan.lr_schedule->construction_rate_first_group_only = false;
  plan.gradient_clipping = scenario.deepspeed.gradient_clipping;
  plan.golden = scenario.golden;
  return plan;
}

Plan precision_twin_plan(const Scenario& scenario, const Plan& run) {
  Plan plan = golden_plan(scenario);
  plan.dtype = EngineDtype::float32;
  plan.precision = run.precision;
  plan.mixed = run.mixed;
  // Stage 0's optimizer wrapper (FP16_Optimizer): without accumulation both loss scalers act
  // alike until an overflow, and a twin that overflows is reported by the run's own skips.
  plan.mixed.scaler = LossScalerKind::fp16_optimizer;
  // The twin is a correct run of this precision: no extra step when its optimizer is built.
  plan.mixed.optimizer_steps_at_initialization = false;
  // ... and divides every step's gradients by the scale they were computed with.
  plan.mixed.unscales_with_updated_scale = false;
  plan.deepspeed_version = run.deepspeed_version;
  plan.device = run.device;  // the run's device rounds as the run does
  return plan;
}

LoopSpec golden_loop(const Scenario& scenario) {
  LoopSpec loop;
  loop.steps = scenario.golden.steps;
  return loop;
}

}  // namespace trainrepro
