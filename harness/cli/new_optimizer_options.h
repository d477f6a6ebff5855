// `trainrepro new --client-optimizer` and `--param-groups`: the optimizer a training script
// builds and passes to deepspeed.initialize, and the param groups it hands over, written as the
// scenario's "client_optimizer" and "parameter_groups" sections (docs/scenarios.md). Each
// option takes a compact spelling or the path of a JSON file (a value ending in ".json") that
// holds the section itself. Only the spelling is checked here: the values are checked where
// every scenario's are, when `new` loads the scenario, and an error found there is told in the
// option's own terms (said_by_option).
#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/json/scenario_error.h"

namespace trainrepro {

// A command-line value that cannot make a scenario; the message names the option.
struct ArgumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A section an option wrote into the scenario, and how the user wrote it.
struct OptionSection {
  std::string option;     // "--client-optimizer"
  std::string section;    // "client_optimizer"
  std::string written;    // the option's value as given
  std::string json_file;  // the file the value named; empty for the compact spelling
  nlohmann::ordered_json value;
  // Compact spelling: what the user wrote for each value, by its JSON pointer inside the
  // section ("/params/betas" → "betas=0.9,0.95").
  std::map<std::string, std::string> written_at;
};

// "AdamW lr=3e-4 weight_decay=0.1 betas=0.9,0.95": the torch.optim class, then KEY=VALUE
// pairs with torch's parameter names; a value is a number, true or false, or (betas) two
// numbers with a comma. Becomes {"type": "AdamW", "params": {"lr": 0.0003, …}}.
OptionSection client_optimizer_option(const std::string& value);

// "no_decay=bias,LayerNorm.weight": the idiom of DeepSpeedExamples and Megatron, two groups:
// every parameter whose name contains none of the substrings, with the optimizer's weight
// decay, then those that contain one (Python's `any(nd in n for nd in no_decay)`), with
// weight_decay 0.
OptionSection parameter_groups_option(const std::string& value);

// An error of the scenario `new` is loading ("OUT.json:/client_optimizer/params/betas: …") told
// in the terms of the option that wrote that section: "--client-optimizer: 'betas=0.9,1.5':
// expected …", "--client-optimizer opt.json:/params: …"; what() unchanged when no option wrote
// the section it is about.
std::string said_by_option(const ScenarioError& error, const std::string& scenario_file,
                           const std::vector<OptionSection>& options);

// The same for a warning, "OUT.json:/parameter_groups/1/names_containing/0: …".
std::string warning_said_by_option(const std::string& warning, const std::string& scenario_file,
                                   const std::vector<OptionSection>& options);

}  // namespace trainrepro
