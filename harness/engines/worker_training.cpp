#include "harness/engines/worker_training.h"

#include <filesystem>

#include "harness/scenario/json_document.h"

namespace trainrepro {
namespace {

// What the worker's memory census cannot judge yet, or "" when it can: ZeRO's model-state and
// traffic figures (measured inside the reference engine), the true peak a budget needs (the
// census sees what is alive at each sample, not the allocator's high-water mark). Gathered ZeRO-3
// parameters kept are judged from what lives beyond the engine's own objects (judge_zero.cpp).
std::string memory_not_judged_on_deepspeed(const Scenario& scenario) {
  if (scenario.memory.budget_peak_bytes) {
    return "a peak budget (/memory/budget_peak_bytes: the worker's census samples what is "
           "alive, not the allocator's peak)";
  }
  if (!scenario.expect.diagnosis) return "";
  switch (*scenario.expect.diagnosis) {
    case DiagnosisKind::memory_over_budget:
      return "a peak budget (the worker's census samples what is alive, not the allocator's "
             "peak)";
    case DiagnosisKind::model_states_differ_from_zero:
    case DiagnosisKind::traffic_differs_from_zero:
      return "ZeRO's model-state and traffic figures (the reference engine measures them "
             "inside its partitions; the worker does not)";
    default:
      return "";
  }
}

// The last lines of a Python traceback: where it raised, without the frames above.
std::string traceback_tail(const std::string& traceback, int lines) {
  size_t at = traceback.size();
  while (at > 0 && (traceback[at - 1] == '\n')) --at;
  for (int seen = 0; at > 0; --at) {
    if (traceback[at - 1] == '\n' && ++seen == lines) break;
  }
  return traceback.substr(at);
}

Verdict worker_verdict(Outcome outcome, ErrorSource source, std::string found) {
  Verdict verdict;
  verdict.outcome = outcome;
  verdict.error_source = source;
  verdict.found = std::move(found);
  return verdict;
}

// A TorchScript file stands for the user's own eager model on the reference engine; the real
// engines need the eager model. Measured 2026-12-04 (torch 2.11.0): deepspeed.initialize of
// DeepSpeed 0.19.8 at ZeRO 0, 2 and 3 and FSDP2's fully_shard both raise on a loaded
// ScriptModule, the latter also when it is wrapped in an eager module (it hooks every
// submodule it manages).
std::string script_module_refused(const std::string& who) {
  return "a TorchScript model (/model/options/file): " + who +
         " hooks the model's modules, which a ScriptModule refuses (\"register_forward_pre_hook "
         "is not supported on ScriptModules\"); the eager model it was exported from runs on it, "
         "in the user's own script under `trainrepro watch`";
}

}  // namespace

std::optional<std::string> unsupported_by_deepspeed_worker(const Scenario& scenario,
                                                           const Plan& plan) {
  const std::string not_yet = "skipped: not yet on --engine deepspeed: ";
  if (plan.device == Device::cuda) {
    return not_yet + "CUDA (the worker trains on the CPU in this slice; run with --device cpu)";
  }
  if (std::holds_alternative<TorchScriptOptions>(scenario.model.options)) {
    return "skipped: --engine deepspeed: " + script_module_refused("DeepSpeed's engine");
  }
  // DeepSpeed's CPU accelerator takes some fp16 configs (others it refuses: "is not supported on
  // your device"), but its loss scaling there is not what a GPU run does: measured with 0.19.8,
  // gradients read 65536 or 256 times scaled at ZeRO 1-2, a scale pinned at its minimum raising,
  // non-finite traces. fp16 is judged on a GPU (scripts/nightly-gpu), not faked here.
  if (plan.precision == Precision::fp16) {
    return std::string(
        "skipped: --engine deepspeed: fp16 on a CPU (DeepSpeed's loss scaling "
        "is built for CUDA; the GPU nightly runs fp16 scenarios)");
  }
  if (plan.optimizer.kind == OptimizerKind::lamb) {
    return std::string("skipped: --engine deepspeed: DeepSpeed's FusedLamb has no CPU kernel");
  }
  if (scenario.loop.evaluation && scenario.loop.evaluation->backward) {
    // Measured with 0.19.8: engine.backward's hooks raise "Direct calls to tensor.backward()
    // are not supported in this configuration" at ZeRO stage 0, so the user's loop stops at
    // its first evaluation instead of leaking.
    return not_yet +
           "an evaluation that calls loss.backward() (/loop/evaluation/backward): DeepSpeed "
           "raises on a direct tensor.backward() outside engine.backward";
  }
  const std::string memory = memory_not_judged_on_deepspeed(scenario);
  if (!memory.empty()) return not_yet + memory;
  if (scenario.loop.clip_grad_norm > 0.0) {
    return not_yet + "the loop's own clip_grad_norm (/loop/clip_grad_norm)";
  }
  return std::nullopt;
}

std::optional<std::string> unsupported_by_fsdp2_worker(const Scenario& scenario, const Plan& plan) {
  const std::string none = "skipped: --engine fsdp2: no FSDP2 counterpart: ";
  const std::string not_yet = "skipped: not yet on --engine fsdp2: ";
  if (plan.device == Device::cuda) {
    return not_yet + "CUDA (the worker trains on the CPU in this slice; run with --device cpu)";
  }
  if (std::holds_alternative<TorchScriptOptions>(scenario.model.options)) {
    return none + script_module_refused("fully_shard");
  }
  if (plan.precision == Precision::fp16) {
    return none + "fp16 with DeepSpeed's dynamic loss scaling (/deepspeed/fp16)";
  }
  if (scenario.trainer) return none + "the Hugging Face Trainer's DeepSpeed loop (/hf_trainer)";
  if (!scenario.deepspeed.client_optimizer && plan.optimizer.kind == OptimizerKind::lamb) {
    return none + "DeepSpeed's FusedLamb (/deepspeed/optimizer/type)";
  }
  // The config's scheduler becomes a torch LRScheduler with DeepSpeed's rates and OneCycle's
  // momentum (config_schedule.py): every type DeepSpeed's config names is mapped.
  // Offload to the CPU is FSDP2's CPUOffloadPolicy; FSDP2 offloads to host memory only.
  if (scenario.deepspeed.offload_optimizer_device == "nvme") {
    return none +
           "ZeRO-Infinity's NVMe offload (/deepspeed/zero_optimization/offload_optimizer/"
           "device): FSDP2's CPUOffloadPolicy offloads to host memory only";
  }
  if (!plan.managed_gradient_accumulation) {
    return none + "managed_gradient_accumulation false (/deepspeed: DeepSpeed's own counter)";
  }
  if (scenario.loop.forward == ForwardHabit::module) {
    return none + "a forward around DeepSpeed's engine hooks (/loop/forward \"module\")";
  }
  if (scenario.loop.clip_grad_norm > 0.0) {
    return not_yet + "the loop's own clip_grad_norm (/loop/clip_grad_norm)";
  }
  const std::string memory = memory_not_judged_on_deepspeed(scenario);
  if (!memory.empty()) return not_yet + memory;
  return std::nullopt;
}

nlohmann::json deepspeed_job(const Scenario& scenario, const Golden& golden) {
  const nlohmann::json written = read_json_file(scenario.file);
  nlohmann::json job = {{"deepspeed", scenario.deepspeed.received},
                        {"loop", written.value("loop", nlohmann::json::object())},
                        {"steps", scenario.golden.steps},
                        {"loop_steps", scenario.loop.steps},
                        {"memory", true},
                        {"world_size", scenario.world_size},
                        {"parameter_groups", written.value("parameter_groups", nlohmann::json())},
                        {"client_optimizer", written.value("client_optimizer", nlohmann::json())},
                        {"model", golden.key.at("model")},
                        {"data", golden.key.at("data")},
                        {"golden",
                         {{"file", std::filesystem::absolute(golden.file).string()},
                          {"parameters", golden.parameter_names}}}};
  if (scenario.trainer) {
    // The Trainer's loop (ds_worker.py backward_/step_as_the_trainer_does): its window, whether
    // accelerate hands DeepSpeed the boundary, and the torch AdamW it builds when the config has
    // no optimizer (two groups: no decay for biases and LayerNorm parameters), which accelerate
    // swaps for DeepSpeedCPUAdam when the optimizer is offloaded and zero_force_ds_cpu_optimizer
    // is not false (Accelerator._prepare_deepspeed; the reason check_initialize lets it pass).
    const DeepSpeedConfig& config = scenario.deepspeed;
    nlohmann::json trainer = {
        {"gradient_accumulation_steps", scenario.trainer->gradient_accumulation_steps},
        {"explicit_boundary", scenario.trainer->explicit_boundary}};
    const std::optional<OptimizerConfig>& optimizer = config.optimizer;
    if (optimizer && optimizer->decay_skips_bias_and_norm) {
      trainer["optimizer"] = {{"lr", optimizer->lr},
                              {"betas", {optimizer->beta1, optimizer->beta2}},
                              {"eps", optimizer->eps},
                              {"weight_decay", optimizer->weight_decay},
                              {"as_deepspeed_cpu_adam", config.offload_optimizer_device != "none" &&
                                                            config.zero_force_ds_cpu_optimizer}};
    }
    job["trainer"] = trainer;
  }
  return job;
}

nlohmann::json fsdp2_job(const Scenario& scenario, const Plan& plan, const Golden& golden) {
  nlohmann::json job = deepspeed_job(scenario, golden);
  const OptimizerConfig& optimizer = plan.optimizer;
  const char* kinds[] = {"sgd", "adam", "adamw", "lamb"};
  job["engine"] = "fsdp2";
  const nlohmann::json schedule =
      plan.lr_schedule ? lr_schedule_to_json(*plan.lr_schedule) : nlohmann::json();
  job["fsdp2"] = {
      {"train_micro_batch_size_per_gpu", plan.batch.micro_batch_per_gpu},
      {"gradient_accumulation_steps", plan.batch.gradient_accumulation_steps},
      {"gradient_clipping", plan.gradient_clipping},
      {"zero_stage", plan.zero_stage},
      // "cpu": CPUOffloadPolicy (FSDP2 offloads the parameters and gradients with the optimizer
      // states, and steps on the CPU); "none": on the mesh's device.
      {"offload_optimizer", scenario.deepspeed.offload_optimizer_device},
      // bf16: MixedPrecisionPolicy(param_dtype=bfloat16), reduce_dtype float32 where DeepSpeed
      // accumulates in float32 (FSDP2 then keeps the window's gradients in float32 too).
      {"precision", precision_name(plan.precision)},
      {"accumulate_in_fp32", plan.mixed.accumulate_in_fp32},
      {"lr_schedule", schedule},  // null: the optimizer's lr throughout
      {"optimizer",
       {{"kind", kinds[static_cast<int>(optimizer.kind)]},
        {"type_as_written", optimizer.type_as_written},
        {"lr", optimizer.lr},
        {"beta1", optimizer.beta1},
        {"beta2", optimizer.beta2},
        {"eps", optimizer.eps},
        {"weight_decay", optimizer.weight_decay},
        {"decoupled_weight_decay", optimizer.decoupled_weight_decay},
        {"momentum", optimizer.momentum},
        {"dampening", optimizer.dampening},
        {"nesterov", optimizer.nesterov}}}};
  return job;
}

std::optional<Verdict> WorkerTrainingEngine::skipped_for(std::optional<std::string> reason) {
  if (!reason) return std::nullopt;
  Verdict verdict;
  verdict.outcome = Outcome::skipped;
  verdict.found = std::move(*reason);
  return verdict;
}

Plan WorkerTrainingEngine::plan_trained(const Scenario& scenario, Plan plan,
                                        std::vector<std::string>& warnings) const {
  if (plan.dtype == EngineDtype::float64) {
    plan.dtype = EngineDtype::float32;
    warnings.push_back(scenario.file + ":/dtype: float64 is the reference engine's; --engine " +
                       python_.versions.engine +
                       " trains the module in float32 and is judged with float32 tolerances");
  }
  return plan;
}

std::variant<Trace, Verdict> WorkerTrainingEngine::train_job(const Scenario& scenario,
                                                             const Golden& golden,
                                                             nlohmann::json job,
                                                             const std::string& title,
                                                             int timeout_seconds,
                                                             WorkerSets* worker_sets) const {
  WorkerTrace worker;
  try {
    worker = run_deepspeed_worker(python_, std::move(job), timeout_seconds, golden.parameter_names,
                                  golden.initial_parameters, worker_sets, scenario.file);
  } catch (const WorkerTraceError& error) {
    return worker_verdict(
        Outcome::error, ErrorSource::infrastructure,
        scenario.file + ": --engine " + python_.versions.engine + ": " + error.what());
  }
  switch (worker.status) {
    case WorkerStatus::skipped:
      return worker_verdict(Outcome::skipped, ErrorSource::none, "skipped: " + worker.reason);
    case WorkerStatus::refused:
      return worker_verdict(Outcome::failed, ErrorSource::none,
                            scenario.file + ": DeepSpeed " + worker.versions.deepspeed +
                                " refused the config in deepspeed.initialize, where DeepSpeed " +
                                scenario.deepspeed.release->version +
                                "'s rules accept it: " + worker.reason);
    case WorkerStatus::error:
    case WorkerStatus::invalid:
      return worker_verdict(Outcome::error, ErrorSource::infrastructure,
                            scenario.file + ": the " + title + " worker raised: " + worker.reason +
                                "\n" + traceback_tail(worker.traceback, 6));
    case WorkerStatus::trained:
      break;
  }
  Trace trace = std::move(worker.trace);
  // The worker built the model from the golden's initial weights (and checked its samples
  // against the golden's), so the run starts where the golden does.
  trace.initial_parameters = golden.initial_parameters;
  trace.frozen_parameter_names = golden.frozen_parameter_names;
  trace.frozen_parameters = golden.frozen_parameters;
  trace.model_states_not_measured =
      "the " + python_.versions.engine +
      " engine does not measure ZeRO's model states (the worker's census counts live tensors, "
      "not partitions)";
  return trace;
}

std::shared_ptr<const TrainingEngine> worker_training_engine(DeepSpeedPython python) {
  if (python.versions.engine == "fsdp2") return fsdp2_worker_engine(std::move(python));
  return deepspeed_worker_engine(std::move(python));
}

std::shared_ptr<const TrainingEngine> training_engine_for(
    const std::optional<DeepSpeedPython>& python) {
  return python ? worker_training_engine(*python) : reference_training_engine();
}

}  // namespace trainrepro
