// The data generators a scenario can name in "data". Every generator is deterministic by its
// seed, so the run under test and its golden see the same samples.
#pragma once
#include <cstdint>
#include <memory>
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

// A user's samples from a safetensors file (models/sample_file.h): what kind they are and the
// sizes a model must fit, found when the scenario loads; the tensors themselves, loaded once.
enum class SampleFileKind { classification, regression, tokens };
struct SampleFileTensors;
struct SafetensorsData {
  std::string file;    // as the scenario writes it
  std::string path;    // where it was read (relative to the scenario's folder)
  std::string sha256;  // of the file's bytes: part of the golden's key
  SampleFileKind kind = SampleFileKind::classification;
  int64_t samples = 0;         // rows in the file; sample i is row i mod samples
  int64_t features = 0;        // feature data: inputs per sample
  int64_t outputs = 0;         // regression: targets per sample
  int64_t classes_needed = 0;  // classification: the largest class id + 1
  int64_t vocab_needed = 0;    // tokens: the largest token id + 1
  int64_t length = 0;          // tokens: positions per sample
  std::shared_ptr<const SampleFileTensors> tensors;
};

using DataOptions =
    std::variant<ClassificationData, RegressionData, TokenSequenceData, SafetensorsData>;

using DataEntry = ZooEntry<DataOptions>;

const std::vector<DataEntry>& data_zoo();

}  // namespace trainrepro
