// The data generators a scenario can name in "data". Every generator is deterministic by its
// seed, so the run under test and its golden see the same samples.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "models/zoo_entry.h"

namespace trainrepro {

// Gaussian features, labels from a fixed random linear teacher (argmax).
struct ClassificationData {
  int64_t features = 16;
  int64_t classes = 4;
};

// Gaussian features, targets from a fixed random linear teacher plus noise.
struct RegressionData {
  int64_t features = 16;
  int64_t outputs = 1;
  double noise = 0.1;
};

// Token sequences of random length in [min_length, max_length], right-padded to max_length;
// variable lengths are what make per-micro-batch loss normalisation differ from the golden.
struct TokenSequenceData {
  int64_t vocab_size = 64;
  int64_t min_length = 2;
  int64_t max_length = 16;
};

using DataOptions = std::variant<ClassificationData, RegressionData, TokenSequenceData>;

using DataEntry = ZooEntry<DataOptions>;

const std::vector<DataEntry>& data_zoo();

}  // namespace trainrepro
