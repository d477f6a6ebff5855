// The Trace: what a training run did, step by step, as plain data for judging and reporting.
// Gradients and parameters are kept as float64 CPU copies so that comparing them with the
// golden never depends on the device or dtype the run used.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "harness/engine/reference_engine.h"
#include "harness/memory/counting_cpu_allocator.h"
#include "harness/memory/memory_probe.h"

namespace trainrepro {

struct MicroStepRecord {
  double loss = 0.0;  // the micro-batch's mean loss (sum over items / items), unscaled
  int64_t items = 0;  // samples, or target tokens
};

struct OptimizerStepRecord {
  int64_t micro_step = 0;  // backwards seen when this optimizer step happened
  double loss = 0.0;       // mean loss over the items since the previous optimizer step
  double gradient_norm = 0.0;
  bool through_engine = true;
  std::vector<at::Tensor> gradients;   // accumulated, before clipping; float64 CPU
  std::vector<at::Tensor> parameters;  // after the step; float64 CPU
  ModelStateBytes model_states;        // this rank's, at the boundary before the step
  int64_t ring_bytes = 0;              // by this rank's engine since the previous step
  // Mixed precision: the step was skipped (gradients overflowed), the loss scale the window's
  // gradients carried, and the line DeepSpeed logs about the loss scale (empty when none).
  bool skipped = false;
  double loss_scale = 1.0;
  std::string log;
  double unscaled_by = 0.0;  // the scale the update divided the gradients by (0: none)
  // The learning rate the update used and the LR scheduler's last_batch_iteration then.
  double lr = 0.0;
  int64_t scheduler_iteration = -1;
  // Bytes of the harness's own copies (initial parameters, recorded gradients and parameters)
  // alive on the run's device after this step: not the user's, not the engine's.
  int64_t harness_tensor_bytes = 0;
  // Wall-clock and process CPU seconds from the loop's start to this step's boundary (after the
  // update, before what the loop does between steps); on CUDA after a device synchronisation
  // when LoopOptions::time_steps asks for one.
  double wall_seconds = 0.0;
  double cpu_seconds = 0.0;
  // When the next step's time starts: after LoopOptions::between_steps, if any.
  double resumed_wall_seconds = 0.0;
  double resumed_cpu_seconds = 0.0;
};

struct MemorySnapshot {
  int64_t optimizer_step = 0;
  // PyTorch's memory snapshot format, for its memory viewer: LibTorch's own on CUDA, the
  // training's live CPU tensors on CPU (cpu_memory_snapshot.h).
  std::string pickle;
};

// How the engine reduces gradients across ranks, which decides what a loop that turns gradient
// synchronisation off, or steps the optimizer inside a window, leaves the optimizer.
enum class GradientReduction {
  // Reduced when a backward reaches the engine's accumulation boundary: a backward inside
  // no_sync() leaves each rank's own gradient in .grad, where the optimizer steps on it
  // (DeepSpeed's semantics: the reference engine and DeepSpeed itself).
  at_accumulation_boundary,
  // Every backward with sync on reduce-scatters into the sharded .grad the optimizer holds;
  // with sync off the gradients stay in the unsharded parameters, out of the optimizer's
  // reach, until a synced backward (torch's FSDP2).
  at_each_synced_backward,
};

struct Trace {
  std::vector<std::string> parameter_names;
  int64_t parameter_numel = 0;    // Ψ
  // Elements of each parameter a checkpointed block holds (recomputed in backward), in
  // parameter order; empty without activation checkpointing.
  std::vector<int64_t> recomputed_parameter_numels;
  // Elements of each frozen parameter (scenario "model.frozen"; not in parameter_names), and at
  // ZeRO stage 3 of those whose unit's output carried autograd history (gathered for backward).
  std::vector<int64_t> frozen_parameter_numels;
  std::vector<int64_t> frozen_backward_parameter_numels;
  // Each parameter's optimizer param group (empty: one group); ZeRO 1-2 pad each group apart.
  std::vector<int64_t> parameter_groups;
  std::vector<at::Tensor> initial_parameters;  // float64 CPU
  // The frozen parameters (requires_grad false) and their values, float64 CPU: never updated.
  std::vector<std::string> frozen_parameter_names;
  std::vector<at::Tensor> frozen_parameters;
  std::vector<MicroStepRecord> micro_steps;
  // Every optimizer step; gradients and parameters only for the first `recorded_steps` (the
  // ones compared with the golden): copying them at every step would itself grow memory.
  std::vector<OptimizerStepRecord> steps;
  EngineCounters counters;
  std::vector<MemorySample> memory;
  std::vector<LiveAllocation> live_at_end;  // CPU tensor allocations alive when the loop ended
  // Host heap one kept tensor costs beyond its bytes (TensorImpl, StorageImpl, allocator
  // header), measured in this process: what a leak of tensors alone adds to the heap.
  int64_t tensor_bookkeeping_bytes = 0;
  int64_t evaluation_peak_bytes = 0;          // largest rise of tensor memory in an evaluation
  int64_t evaluation_peak_bytes_no_grad = 0;  // the same evaluation under no_grad, for scale
  std::vector<MemorySnapshot> memory_snapshots;
  // Why the engine that trained measured no memory, or no model states (empty when it did):
  // the memory judge, and the ZeRO judge, then report this instead of judging empty samples.
  std::string memory_not_measured;
  std::string model_states_not_measured;
  // A worker engine (DeepSpeed, FSDP2) that measures no model states: the bytes of the CPU
  // storages its own objects (module, optimizer, scheduler) reach when the loop ends, beside
  // live_at_end; what lives beyond them is the loop's. -1: not measured.
  int64_t engine_tensor_bytes_at_end = -1;
  GradientReduction gradient_reduction = GradientReduction::at_accumulation_boundary;
  // Bytes per element of the parameters as the engine hands them to the loop whole (gathered at
  // ZeRO 3): 2 where it trains them in bf16 (DeepSpeed under bf16); 0: the plan's dtype.
  int64_t gathered_parameter_element_bytes = 0;
  double seconds = 0.0;
  // Why the run ended before its last step, in DeepSpeed's words (the loss scale reached its
  // minimum and DeepSpeed raised); empty when it ran to the end.
  std::string stopped;
};

}  // namespace trainrepro
