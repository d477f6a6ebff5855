// Whether a model can consume a data generator's samples (shapes and kinds agree). Checked
// when a scenario loads, so a mismatch is a clear error, not a shape error deep in a run.
#pragma once
#include <optional>
#include <string>

#include "models/data_zoo.h"
#include "models/model_zoo.h"

namespace trainrepro {

struct FitProblem {
  std::string model_key;  // key under /model/options that disagrees, or "" for the model name
  std::string message;
};

std::optional<FitProblem> check_model_fits_data(const ModelOptions& model, const DataOptions& data);

}  // namespace trainrepro
