// A model or data generator chosen from its zoo, {"name", "options", "seed"}: the vocabulary the
// models share with the scenario format, kept here, below both, so that models/ never reaches up
// into harness/scenario/.
#pragma once
#include <cstdint>
#include <string>

#include "models/data_zoo.h"
#include "models/model_zoo.h"

namespace trainrepro {

template <typename Options>
struct ZooChoice {
  std::string name;
  Options options;
  int64_t seed = 0;
};
using ModelSpec = ZooChoice<ModelOptions>;
using DataSpec = ZooChoice<DataOptions>;

}  // namespace trainrepro
