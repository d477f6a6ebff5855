#include "harness/scenario/pydantic_error.h"

namespace trainrepro {

std::string python_repr(const nlohmann::json& value) {
  if (value.is_string()) return "'" + value.get<std::string>() + "'";
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_array() || value.is_object()) {  // [1, 'a'] and {'key': 1}, as Python writes them
    std::string items;
    for (auto item = value.begin(); item != value.end(); ++item) {
      if (!items.empty()) items += ", ";
      if (value.is_object()) items += python_repr(item.key()) + ": ";
      items += python_repr(*item);
    }
    return value.is_array() ? "[" + items + "]" : "{" + items + "}";
  }
  return value.dump();
}

std::string python_type_name(const nlohmann::json& value) {
  if (value.is_string()) return "str";
  if (value.is_null()) return "NoneType";
  if (value.is_boolean()) return "bool";
  if (value.is_number_integer()) return "int";
  if (value.is_number_float()) return "float";
  return value.is_array() ? "list" : "dict";
}

std::string extra_forbidden_text(const nlohmann::json& value) {
  return "Extra inputs are not permitted [type=extra_forbidden, input_value=" +
         python_repr(value) + ", input_type=" + python_type_name(value) + "]";
}

std::string validation_error_line(const std::string& model,
                                  const std::vector<PydanticError>& errors) {
  std::string line = std::to_string(errors.size()) + " validation error" +
                     (errors.size() == 1 ? "" : "s") + " for " + model;
  for (const PydanticError& error : errors) line += ": " + error.location + ": " + error.text;
  return line;
}

}  // namespace trainrepro
