// The Plan: what a scenario resolves to under DeepSpeed's rules — the batch arithmetic, the
// device, the precision, the ZeRO stage, the optimizer. The engine runs a Plan, never a raw
// config. Resolution fails exactly where DeepSpeed's config constructor would.
#pragma once
#include <cstdint>
#include <variant>

#include "harness/scenario/batch_config.h"
#include "harness/scenario/config_error.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

enum class Device { cpu, cuda };
enum class Precision { fp32, fp16, bf16 };

struct Plan {
  ResolvedBatch batch;
  Device device = Device::cpu;
  EngineDtype dtype = EngineDtype::float32;
  Precision precision = Precision::fp32;
  int64_t zero_stage = 0;
  OptimizerConfig optimizer;
  double gradient_clipping = 0.0;
  GoldenSpec golden;
};

using PlanResolution = std::variant<Plan, ConfigError>;

// DeepSpeed's config checks, in its order: precision flags (while reading params), batch sizes
// (`_configure_train_batch_size`), then the sanity check (ZeRO stage). Shared by scenarios
// and `trainrepro config resolve`.
BatchResolution resolve_deepspeed_config(const DeepSpeedConfig& config, int64_t world_size);

PlanResolution resolve_plan(const Scenario& scenario, Device device);

const char* device_name(Device device);
const char* precision_name(Precision precision);

}  // namespace trainrepro
