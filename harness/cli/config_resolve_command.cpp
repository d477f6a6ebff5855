// `trainrepro config resolve DS_CONFIG.json --world-size N`: DeepSpeed's batch resolution for a
// user's own config, with DeepSpeed's messages for invalid combinations.
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario_error.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

int run_config_resolve(const ConfigResolveArgs& args) {
  DeepSpeedConfig config;
  try {
    config = read_deepspeed_config(read_json_file(args.config_file), args.config_file, "");
  } catch (const ScenarioError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  for (const std::string& warning : config.warnings) std::cerr << "warning: " << warning << "\n";

  const BatchResolution resolution = resolve_deepspeed_config(config, args.world_size);
  if (const auto* error = std::get_if<ConfigError>(&resolution)) {
    std::cerr << args.config_file << ": " << error->message << "\n";
    return kExitBadInput;
  }
  const ResolvedBatch& batch = std::get<ResolvedBatch>(resolution);
  // Ordered as DeepSpeed's docs list them, so the output reads like the question it answers.
  const nlohmann::ordered_json resolved = {
      {"train_batch_size", batch.train_batch_size},
      {"train_micro_batch_size_per_gpu", batch.micro_batch_per_gpu},
      {"gradient_accumulation_steps", batch.gradient_accumulation_steps},
      {"world_size", batch.world_size},
  };
  std::cout << resolved.dump() << "\n";
  return kExitOk;
}

}  // namespace trainrepro
