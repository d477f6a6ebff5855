// Loads and validates a scenario file. Throws ScenarioError (file:pointer: expected…, found…)
// for anything wrong: syntax, types, unknown keys, unknown names, inconsistent sections.
#pragma once
#include <string>

#include "harness/json/json_fields.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

Scenario load_scenario(const std::string& file);

// The same for a document already parsed (`file` names it in messages): what the fuzz target
// feeds. `key_order` is the document's as written (json_document.h), where a message follows
// it; may be null.
Scenario load_scenario_document(const nlohmann::json& document, const std::string& file,
                                const KeyOrder* key_order = nullptr);

}  // namespace trainrepro
