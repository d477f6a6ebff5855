// A scenario: one training setup, as loaded from its file. Immutable once loaded; every field
// has its value (defaults applied) and `file` names where it came from, so every later message
// can start with `file:/json/pointer:`. The format is documented in docs/scenarios.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/bug_reference.h"
#include "harness/scenario/deepspeed_config.h"
#include "harness/scenario/expectation.h"
#include "harness/scenario/performance_spec.h"
#include "harness/scenario/release_outcomes.h"
#include "models/checkpointing_choice.h"
#include "models/zoo_choice.h"

namespace trainrepro {

enum class DeviceChoice { cpu, cuda, auto_detect };
enum class Requirement { cuda, mpi };

// The user's training-loop habits. The engine is correct; these say what the user's code does
// around it. Each has a correct value (the default) and the mistakes seen in the field.
enum class ZeroGradHabit {
  at_boundary,       // the engine zeroes after its optimizer step (correct)
  every_micro_step,  // the user zeroes before every backward: only the last micro-batch survives
  never,             // the user steps the optimizer at the window's end and never zeroes
};
enum class LossScalingHabit {
  engine,  // engine.backward(loss) divides by GAS (correct)
  none,    // the user calls loss.backward() directly: micro-batch gradients are summed
  twice,   // the user divides by GAS and so does engine.backward
};
// Where the user's forward goes: through the engine (engine(x), DeepSpeed hooks its outputs from
// 0.18.3 on) or around it (engine.module(x)), which matters when the loop calls loss.backward().
enum class ForwardHabit { engine, module };
enum class SteppingHabit {
  every_micro_step,  // engine.step() after every backward (correct)
  once_per_window,   // engine.step() once after GAS backwards: boundary every GAS² micro-batches
  optimizer_every_micro_step,  // optimizer.step() + zero_grad() directly after every backward
};
// When the loop lets a backward reduce gradients across ranks. DeepSpeed's engine.no_sync()
// (0.16.0+) and FSDP2's model.set_requires_gradient_sync(False) turn the reduction off; a loop
// that turns it off for the boundary's backward too never reduces that window.
enum class GradientSync {
  engine,            // the loop never touches it: DeepSpeed reduces at the boundary; FSDP2's
                     // loop syncs only the window's last backward (correct)
  every_micro_step,  // sync on every backward: the same gradients (FSDP2 reduce-scatters every
                     // micro-step; DeepSpeed has no switch for it, so as `engine`)
  first_micro_step,  // sync on the window's first backward and off for the others: the
                     // off-by-one that leaves the boundary's backward unsynced
  never,             // every backward inside no_sync() / with sync off
};
// Whether the loop lets a backward reduce across ranks (`window_starts`: the window's first).
inline bool syncs_gradients(GradientSync sync, bool window_starts) {
  return sync == GradientSync::engine || sync == GradientSync::every_micro_step ||
         (sync == GradientSync::first_micro_step && window_starts);
}
// Whether the loop ever turns the sync off (some backward of a window of several).
inline bool turns_sync_off(GradientSync sync) { return !syncs_gradients(sync, false); }
// Whether the boundary's backward, a window's last, runs with the sync off; with a window of one
// backward it is also the window's first.
inline bool boundary_unsynced(GradientSync sync, int64_t window) {
  return !syncs_gradients(sync, window == 1);
}
// Who steps the LR scheduler DeepSpeed built from the config.
enum class LrSchedulerStepping {
  engine,            // engine.step() at every boundary, and nobody else (correct)
  every_micro_step,  // the loop also calls lr_scheduler.step() after every micro-batch
};
enum class TokenNormalisation {
  whole_batch,      // token losses summed and divided by the tokens of the whole window (correct)
  per_micro_batch,  // each micro-batch averaged over its own tokens, then averaged
};

// What the user's loop keeps across steps (a Python list it appends to every micro-step).
enum class KeepHabit {
  nothing,             // deleted / not kept (the fix)
  loss_item,           // loss.item(): a float (the fix)
  loss_with_graph,     // the loss tensor: keeps its autograd graph's nodes alive
  loss_detached,       // loss.detach(): a tensor and its TensorImpl per step
  loss_on_cpu,         // loss.detach().cpu()
  outputs_with_graph,  // the model's outputs: their tensors and graph
  outputs_detached,    // outputs.detach(): stays on the device
  outputs_on_cpu,      // outputs.detach().cpu(): off the device, still in host memory
  // After each optimizer step the loop gathers the full parameters (for logging, or an
  // evaluation outside the engine, as with deepspeed.zero.GatheredParameters) and keeps:
  gathered_parameters,       // the gathered tensors, until the next step (at ZeRO stage 3 each
                             // rank then holds the unpartitioned model)
  gathered_parameter_norms,  // only their norms, as floats (the fix)
};

// An evaluation pass the loop runs between optimizer steps, on held-out samples.
struct EvaluationSpec {
  int64_t every = 1;           // after every `every` optimizer steps
  int64_t batches = 1;         // micro-batches per evaluation
  bool no_grad = true;         // under torch.no_grad() (the fix) or building graphs
  bool sum_as_tensor = false;  // eval_loss += loss (tensor) instead of += loss.item()
  bool backward = false;       // calls eval_loss.backward(): gradients where none are needed
};

struct LoopSpec {
  KeepHabit keep = KeepHabit::nothing;
  std::optional<EvaluationSpec> evaluation;
  ZeroGradHabit zero_grad = ZeroGradHabit::at_boundary;
  LossScalingHabit loss_scaling = LossScalingHabit::engine;
  ForwardHabit forward = ForwardHabit::engine;
  SteppingHabit stepping = SteppingHabit::every_micro_step;
  TokenNormalisation token_normalisation = TokenNormalisation::whole_batch;
  GradientSync gradient_sync = GradientSync::engine;
  // > 0: the loop calls torch.nn.utils.clip_grad_norm_(model.parameters(), this) itself before
  // engine.step() at each boundary, on the gradients as autograd left them (under fp16: still
  // multiplied by the loss scale).
  double clip_grad_norm = 0.0;
  LrSchedulerStepping lr_scheduler_step = LrSchedulerStepping::engine;
  // Whether the user's model checkpoints its blocks, and how (models/activation_checkpoint.h).
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::none;
  int64_t steps = 0;  // optimizer steps to run; the loader sets it to golden.steps when absent
};

// The engine's floating-point type. float64 makes CPU comparisons exact to ~1e-12 and
// diagnoses crisp; float32 is what users train with and needs the tolerances.
enum class EngineDtype { float32, float64 };

// How memory is judged: a leak is a step that leaves allocations alive, in every window of
// boundaries after warm-up (a window always spans the evaluation period), whatever their size.
struct MemorySpec {
  int64_t warmup_steps = 5;  // boundaries discarded (allocator and cache warm-up)
  int64_t window = 8;        // survivors (or growth, on CUDA) must show in every window
  std::optional<int64_t> budget_peak_bytes;  // peak live tensor bytes of the training allowed
  // "judge": false opts the scenario out of the leak verdict; `reason` (required then) is
  // printed on its outcome line. Judged, loop.steps defaults to the steps a verdict needs.
  bool judge = true;
  std::string reason;
};

// A scenario's own comparison tolerance, replacing the dtype default; a reason is required.
struct ToleranceOverride {
  double rtol = 0.0;
  double atol = 0.0;
  std::string reason;
};

// The Hugging Face Trainer's own loop (a scenario with "hf_trainer"): it counts its window of
// micro-batches itself, divides the loss by it, and calls accelerator.backward(loss,
// scale_wrt_gas=False); the accelerate release decides whether DeepSpeed hears of the window
// (harness/scenario/hf_trainer_release.h).
struct TrainerLoopSpec {
  int64_t gradient_accumulation_steps = 1;  // TrainingArguments': the Trainer's window
  std::string transformers_version;
  std::string accelerate_version;
  // accelerate passes the Trainer's sync_gradients to engine.set_gradient_accumulation_boundary
  // and calls engine.step() only then (1.8.0+); otherwise engine.step() after every backward.
  bool explicit_boundary = true;
};

// The reference the run is judged against: one unaccumulated batch of the intended size.
struct GoldenSpec {
  int64_t train_batch_size = 0;
  int64_t steps = 4;
};

struct Scenario {
  std::string file;  // as given on the command line, for messages
  std::string name;
  std::string description;
  std::vector<std::string> tags;
  std::optional<BugReference> reference;  // a catalogued upstream bug: where it was reported
  std::vector<Requirement> requires_;
  ModelSpec model;
  DataSpec data;
  DeepSpeedConfig deepspeed;
  int64_t world_size = 1;
  DeviceChoice device = DeviceChoice::cpu;
  EngineDtype dtype = EngineDtype::float32;
  LoopSpec loop;
  std::optional<TrainerLoopSpec> trainer;  // the loop is the Hugging Face Trainer's
  MemorySpec memory;
  std::optional<ToleranceOverride> tolerance;
  GoldenSpec golden;
  Expectation expect;
  // A DeepSpeed implementation bug: the releases that show it and those that pass; on
  // `run --engine deepspeed` the installed release chooses the expectation (release_outcomes.h).
  std::optional<ReleaseOutcomes> deepspeed_releases;
  std::optional<PerformanceSpec> performance;  // how `perf run` measures it; `run` ignores it
  // A performance scenario with neither "golden" nor "expect": measured by `perf run`, never
  // trained by `run` or given a golden (a GPT of 100 M parameters would need 1.6 GB of float64
  // per recorded step). `golden` then holds one step and nothing reads its batch.
  bool measure_only = false;
};

const EnumSpellings<DeviceChoice>& device_choice_spellings();
const EnumSpellings<EngineDtype>& engine_dtype_spellings();
const EnumSpellings<ZeroGradHabit>& zero_grad_spellings();
const EnumSpellings<LossScalingHabit>& loss_scaling_spellings();
const EnumSpellings<ForwardHabit>& forward_spellings();
const EnumSpellings<SteppingHabit>& stepping_spellings();
const EnumSpellings<GradientSync>& gradient_sync_spellings();
const EnumSpellings<TokenNormalisation>& token_normalisation_spellings();
const EnumSpellings<LrSchedulerStepping>& lr_scheduler_stepping_spellings();
const EnumSpellings<KeepHabit>& keep_spellings();
const EnumSpellings<ActivationCheckpointing>& activation_checkpointing_spellings();
const EnumSpellings<Requirement>& requirement_spellings();

}  // namespace trainrepro
