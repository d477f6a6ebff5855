#include "models/data_zoo.h"

#include "models/sample_file.h"

namespace trainrepro {
namespace {

DataOptions read_classification(ObjectReader& options) {
  ClassificationData data;
  data.features = options.optional_int("features", data.features, 1);
  data.classes = options.optional_int("classes", data.classes, 2);
  return data;
}

DataOptions read_regression(ObjectReader& options) {
  RegressionData data;
  data.features = options.optional_int("features", data.features, 1);
  data.outputs = options.optional_int("outputs", data.outputs, 1);
  data.noise = options.optional_number("noise", data.noise, 0.0);
  return data;
}

DataOptions read_token_sequences(ObjectReader& options) {
  TokenSequenceData data;
  data.vocab_size = options.optional_int("vocab_size", data.vocab_size, 2);
  data.min_length = options.optional_int("min_length", data.min_length, 2);
  data.max_length = options.optional_int("max_length", data.max_length, 2);
  if (data.min_length > data.max_length) {
    options.fail("min_length", "min_length (" + std::to_string(data.min_length) +
                                   ") must not exceed max_length (" +
                                   std::to_string(data.max_length) + ")");
  }
  return data;
}

}  // namespace

const std::vector<DataEntry>& data_zoo() {
  static const std::vector<DataEntry> zoo = {
      {"classification", "Gaussian features, class labels from a random linear teacher",
       read_classification},
      {"regression", "Gaussian features, targets from a random linear teacher plus noise",
       read_regression},
      {"token_sequences", "variable-length token sequences, right-padded", read_token_sequences},
      {"safetensors", "your own samples from a safetensors file", read_safetensors_data,
       /*seeded=*/false},
  };
  return zoo;
}

}  // namespace trainrepro
