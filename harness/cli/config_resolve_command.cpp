// `trainrepro config resolve DS_CONFIG.json --world-size N`: what DeepSpeedConfig's constructor
// makes of a user's own config (read as hjson, as DeepSpeed reads files) in the named release:
// the batch resolution, or DeepSpeed's message for what it refuses.
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/scenario/hf_trainer.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/plan.h"
#include "harness/json/printable.h"
#include "harness/json/scenario_error.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

int run_config_resolve(const ConfigResolveArgs& args) {
  const std::string version =
      args.deepspeed_version.empty() ? newest_deepspeed_release().version : args.deepspeed_version;
  std::string note;
  const DeepSpeedRelease* release = find_deepspeed_release(version, note);
  if (!release) {
    std::cerr << "--deepspeed-version: expected a DeepSpeed release this harness knows ("
              << describe_known_releases() << "), found \"" << version << "\"\n";
    return kExitBadInput;
  }
  if (!note.empty()) std::cerr << "note: " << note << "\n";
  // Batch sizes need no optimizer: a config whose optimizer the engine lacks still resolves.
  DeepSpeedConfig config;
  try {
    KeyOrder key_order;
    const nlohmann::json pasted =
        read_json_file(args.config_file, JsonDialect::deepspeed_config, &key_order);
    // Every "auto" at once, with what the Trainer would write (not one key per run).
    if (const std::vector<std::string> autos = find_auto_values(pasted); !autos.empty()) {
      std::cerr << args.config_file << ":" << autos.front() << ": "
                << describe_auto_values(pasted, args.world_size) << "\n";
      return kExitBadInput;
    }
    config = read_deepspeed_config(pasted, args.config_file, "", *release, &key_order);
  } catch (const ScenarioError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  for (const std::string& warning : config.warnings) {
    std::cerr << "warning: " << printable(warning) << "\n";
  }

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
      {"deepspeed_version", release->version},
  };
  std::cout << resolved.dump() << "\n";
  return kExitOk;
}

}  // namespace trainrepro
