// A model or data generator chosen from its zoo, {"name", "options", "seed"}: the vocabulary the
// models share with the scenario format, kept here, below both, so that models/ never reaches up
// into harness/scenario/.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/data_zoo.h"
#include "models/model_zoo.h"

namespace trainrepro {

template <typename Options>
struct ZooChoice {
  std::string name;
  Options options;
  int64_t seed = 0;
};
using DataSpec = ZooChoice<DataOptions>;

// A model also says which of its parameters the user froze (requires_grad=False, as PEFT and
// fine-tuning scripts do): names or module paths of named_parameters() (models/parameter_names.h).
// Frozen parameters get no gradient and no optimizer state, in the run and in its golden.
struct ModelSpec : ZooChoice<ModelOptions> {
  std::vector<std::string> frozen = {};
};

}  // namespace trainrepro
