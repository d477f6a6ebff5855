// A scenario: one training setup, as loaded from its file. Immutable once loaded; every field
// has its value (defaults applied) and `file` names where it came from, so every later message
// can start with `file:/json/pointer:`. The format is documented in scenarios/README.md.
#pragma once
#include <cstdint>
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

// The user's training-loop habits. Filled in by the engine issue; empty for now, and any key
// in it is rejected until then.
struct LoopSpec {};

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
  LoopSpec loop;
  GoldenSpec golden;
  Expectation expect;
};

const EnumSpellings<DeviceChoice>& device_choice_spellings();
const EnumSpellings<Requirement>& requirement_spellings();

}  // namespace trainrepro
