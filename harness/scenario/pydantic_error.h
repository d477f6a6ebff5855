// The text of the pydantic ValidationError that DeepSpeed's config models raise
// (runtime/zero/config.py DeepSpeedZeroConfig, runtime/precision_config.py in 0.19.8). One error
// lists every problem of the model: field errors first, in the model's field order (a nested
// model's, such as offload_param's, located "offload_param.key"), then the keys the model
// forbids, in the order the file writes them (pydantic-core validates the fields, then walks the
// input for extras). Checked against DeepSpeed 0.19.8 with pydantic 2.13.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainrepro {

struct PydanticError {
  std::string location;  // dotted, inside the model: "stage", "offload_param.pin_mem"
  std::string text;      // "Extra inputs are not permitted [type=extra_forbidden, …]"
};

// How Python prints a value pydantic quotes ('text', None, True, 2.5), and its type's name.
std::string python_repr(const nlohmann::json& value);
std::string python_type_name(const nlohmann::json& value);

// "Extra inputs are not permitted [type=extra_forbidden, input_value=1, input_type=int]".
std::string extra_forbidden_text(const nlohmann::json& value);

// pydantic's lines on one line, joined by ": " with the "For further information" lines left
// out: "2 validation errors for DeepSpeedBF16Config: loss_scale: Extra inputs … [type=…]:
// hysteresis: Extra inputs … [type=…]" (tests/deepspeed_oracle/oracle.py reads DeepSpeed's the
// same way).
std::string validation_error_line(const std::string& model,
                                  const std::vector<PydanticError>& errors);

}  // namespace trainrepro
