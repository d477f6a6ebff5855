// The names named_parameters() gives a zoo model, from its options alone (no model is built), so
// that a scenario's "frozen" list is checked where it is read: a model of 10^6 blocks would take
// gigabytes to build just to read its names. Repeated modules (the MLP's layers, the GPT's
// blocks) are described once. A unit test checks these names against built models; to add a
// model, add its case to parameter_naming().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/model_zoo.h"

namespace trainrepro {

struct ParameterNaming {
  std::vector<std::string> before;  // names before the repeated modules
  std::string repeated;             // the ModuleList holding them ("layers", "blocks")
  int64_t repeats = 0;
  std::vector<std::string> inside;  // the names inside one repeated module
  std::vector<std::string> after;   // names after them
};

ParameterNaming parameter_naming(const ModelOptions& options);

// Whether `name` is `entry` or lies inside the module `entry` names ("blocks.0" holds
// "blocks.0.ln1.weight"; "block" holds nothing): how a "frozen" entry selects parameters.
bool name_is_within(const std::string& name, const std::string& entry);
// Whether `entry` selects at least one parameter of the model.
bool selects_a_parameter(const ParameterNaming& naming, const std::string& entry);
// Whether some parameter of the model is selected by none of `entries`.
bool leaves_a_parameter_out(const ParameterNaming& naming, const std::vector<std::string>& entries);
// Every name in named_parameters() order (tests, and messages about small models).
std::vector<std::string> all_parameter_names(const ParameterNaming& naming);
// The names for a message, repeated modules shown once: "layers.<0-2>.weight, layers.<0-2>.bias".
std::string describe_parameter_names(const ParameterNaming& naming);

}  // namespace trainrepro
