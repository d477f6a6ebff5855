// The Plan: what a scenario resolves to under DeepSpeed's rules — the batch arithmetic, the
// device, the precision, the ZeRO stage, the optimizer. The engine runs a Plan, never a raw
// config. Resolution fails exactly where DeepSpeed's config constructor would.
#pragma once
#include <optional>
#include <cstdint>
#include <variant>

#include "harness/scenario/batch_config.h"
#include "harness/scenario/config_error.h"
#include "harness/scenario/precision_config.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

enum class Device { cpu, cuda };

struct Plan {
  ResolvedBatch batch;
  Device device = Device::cpu;
  EngineDtype dtype = EngineDtype::float32;
  Precision precision = Precision::fp32;
  MixedPrecisionPlan mixed;  // when precision is fp16 or bf16
  int64_t zero_stage = 0;
  // Stage 3: parameters of at most this many elements stay whole on every rank (DeepSpeed's
  // stage3_param_persistence_threshold; its default).
  int64_t zero3_param_persistence_threshold = 100000;
  OptimizerConfig optimizer;
  std::optional<LrSchedule> lr_schedule;  // the config's scheduler; none: the optimizer's lr
  double gradient_clipping = 0.0;
  // managed_gradient_accumulation false (DeepSpeed 0.19.4+): every step() is a boundary.
  bool managed_gradient_accumulation = true;
  // The release hooks the engine's forward outputs, so the loop's loss.backward() after an
  // engine forward is scaled by 1/GAS and reduced as engine.backward(loss) would be (stages 1-3).
  bool direct_backward_through_engine = false;
  std::string deepspeed_version;
  // The Hugging Face Trainer runs the loop ("hf_trainer"): its window and whether accelerate
  // hands DeepSpeed the boundary. None: the user's own DeepSpeed loop.
  std::optional<TrainerLoopSpec> trainer;
  GoldenSpec golden;
};

// Micro-batches per optimizer step as the loop feeds them: the Trainer's window where accelerate
// passes its boundary to DeepSpeed (is_gradient_accumulation_boundary() then returns that flag,
// whatever gradient_accumulation_steps DeepSpeed resolved), otherwise DeepSpeed's own GAS.
int64_t accumulation_window(const Plan& plan);
// Micro-batches per window as the loop counts them: the Trainer counts its own window
// (TrainingArguments' gradient_accumulation_steps: the loss's division, num_items_in_batch and
// do_sync_step follow it, whoever decides DeepSpeed's boundary); a DeepSpeed loop follows
// DeepSpeed's gradient_accumulation_steps.
int64_t micro_batches_per_window(const Plan& plan);
// The samples each optimizer step averages: micro batch × accumulation_window × world size.
int64_t effective_train_batch(const Plan& plan);

using PlanResolution = std::variant<Plan, ConfigError>;

// DeepSpeedConfig's checks, in its order: removed keys, the ZeRO schema and precision flags
// (while reading params), then batch sizes (`_configure_train_batch_size`). Shared by scenarios
// and `trainrepro config resolve`.
BatchResolution resolve_deepspeed_config(const DeepSpeedConfig& config, int64_t world_size);

// The config checks, then what deepspeed.initialize and the first backward refuse (the
// optimizer's name, an untested optimizer under ZeRO, a direct loss.backward() at stage 0).
PlanResolution resolve_plan(const Scenario& scenario, Device device);

const char* device_name(Device device);
const char* precision_name(Precision precision);

}  // namespace trainrepro
