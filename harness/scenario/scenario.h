// A scenario: one training setup, as loaded from its file. Immutable once loaded; every field
// has its value (defaults applied) and `file` names where it came from, so every later message
// can start with `file:/json/pointer:`. The format is documented in scenarios/README.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/deepspeed_config.h"
#include "harness/scenario/expectation.h"
#include "models/data_zoo.h"
#include "models/model_zoo.h"

namespace trainrepro {

enum class DeviceChoice { cpu, cuda, auto_detect };
enum class Requirement { cuda, mpi };

// A model or data generator chosen from its zoo: {"name", "options", "seed"}.
template <typename Options>
struct ZooChoice {
  std::string name;
  Options options;
  int64_t seed = 0;
};
using ModelSpec = ZooChoice<ModelOptions>;
using DataSpec = ZooChoice<DataOptions>;

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
enum class SteppingHabit {
  every_micro_step,            // engine.step() after every backward (correct)
  once_per_window,             // engine.step() once after GAS backwards: boundary every GAS² micro-batches
  optimizer_every_micro_step,  // optimizer.step() + zero_grad() directly after every backward
};
enum class TokenNormalisation {
  whole_batch,      // token losses summed and divided by the tokens of the whole window (correct)
  per_micro_batch,  // each micro-batch averaged over its own tokens, then averaged
};

struct LoopSpec {
  ZeroGradHabit zero_grad = ZeroGradHabit::at_boundary;
  LossScalingHabit loss_scaling = LossScalingHabit::engine;
  SteppingHabit stepping = SteppingHabit::every_micro_step;
  TokenNormalisation token_normalisation = TokenNormalisation::whole_batch;
  int64_t steps = 0;  // optimizer steps to run; the loader sets it to golden.steps when absent
};

// The engine's floating-point type. float64 makes CPU comparisons exact to ~1e-12 and
// diagnoses crisp; float32 is what users train with and needs the tolerances.
enum class EngineDtype { float32, float64 };

// A scenario's own comparison tolerance, replacing the dtype default; a reason is required.
struct ToleranceOverride {
  double rtol = 0.0;
  double atol = 0.0;
  std::string reason;
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
  std::vector<Requirement> requires_;
  ModelSpec model;
  DataSpec data;
  DeepSpeedConfig deepspeed;
  int64_t world_size = 1;
  DeviceChoice device = DeviceChoice::cpu;
  EngineDtype dtype = EngineDtype::float32;
  LoopSpec loop;
  std::optional<ToleranceOverride> tolerance;
  GoldenSpec golden;
  Expectation expect;
};

const EnumSpellings<DeviceChoice>& device_choice_spellings();
const EnumSpellings<EngineDtype>& engine_dtype_spellings();
const EnumSpellings<ZeroGradHabit>& zero_grad_spellings();
const EnumSpellings<LossScalingHabit>& loss_scaling_spellings();
const EnumSpellings<SteppingHabit>& stepping_spellings();
const EnumSpellings<TokenNormalisation>& token_normalisation_spellings();
const EnumSpellings<Requirement>& requirement_spellings();

}  // namespace trainrepro
