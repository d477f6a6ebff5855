// Loads and validates a scenario file. Throws ScenarioError (file:pointer: expected…, found…)
// for anything wrong: syntax, types, unknown keys, unknown names, inconsistent sections.
#pragma once
#include <string>

#include "harness/scenario/scenario.h"

namespace trainrepro {

Scenario load_scenario(const std::string& file);

// The same for a document already parsed (`file` names it in messages): what the fuzz target
// feeds.
Scenario load_scenario_document(const nlohmann::json& document, const std::string& file);

}  // namespace trainrepro
