// Model and data options as JSON, every option spelled out with its value (defaults included),
// so that a golden's key changes whenever anything that shapes the numbers changes.
#pragma once
#include <nlohmann/json.hpp>

#include "models/data_zoo.h"
#include "models/model_zoo.h"

namespace trainrepro {

nlohmann::json model_options_to_json(const ModelOptions& options);
nlohmann::json data_options_to_json(const DataOptions& options);

}  // namespace trainrepro
