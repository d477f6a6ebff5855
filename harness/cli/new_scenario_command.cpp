// `trainrepro new --ds-config ds_config.json -o scenario.json`: a complete scenario from a user's
// own DeepSpeed config (kept verbatim), their model and samples when they have them, their loop's
// habits and the batch they intend. The scenario is loaded exactly as `run` loads it before a byte
// is written, so every problem (an "auto" without the Trainer's arguments, a config DeepSpeed
// refuses, a habit misspelt, a model file torch cannot read) shows at once, at its key; then its
// golden is computed, so the next command is `trainrepro run scenario.json`.
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "harness/cli/commands.h"
#include "harness/cli/new_optimizer_options.h"
#include "harness/files/atomic_write.h"
#include "harness/json/printable.h"
#include "harness/json/scenario_error.h"
#include "harness/pipeline/calibration_probe.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/plan.h"
#include "harness/verdict/verdict.h"
#include "models/model_zoo.h"
#include "models/sample_file.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

// A path as the scenario should write it: relative to the scenario's own folder, so the scenario
// and its files can move together.
std::string relative_to_scenario(const std::string& path, const std::string& scenario_file) {
  const fs::path folder = fs::absolute(fs::path(scenario_file)).parent_path();
  return fs::absolute(fs::path(path)).lexically_normal().lexically_relative(folder).string();
}

// The scenario's name from the output file's stem, in the characters a name may hold.
std::string name_from_output(const std::string& output) {
  std::string name = fs::path(output).stem().string();
  for (char& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  }
  return name.empty() ? "my-scenario" : name.substr(0, 100);
}

// "--habit keep=loss_with_graph": the value as JSON when it reads as JSON (numbers, true,
// objects), else as a string.
void add_habit(nlohmann::ordered_json& loop, const std::string& habit) {
  const size_t equals = habit.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw ArgumentError("--habit: expected KEY=VALUE (a \"loop\" key of docs/scenarios.md, "
                        "e.g. keep=loss_with_graph), found \"" + habit + "\"");
  }
  const std::string value = habit.substr(equals + 1);
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(value, nullptr, false);
  loop[habit.substr(0, equals)] = parsed.is_discarded() ? nlohmann::ordered_json(value) : parsed;
}

// The built-in model sized to the user's samples: a GPT for tokens, an MLP for features.
nlohmann::ordered_json builtin_model_for(const SafetensorsData& file) {
  if (file.kind == SampleFileKind::tokens) {
    return {{"name", "gpt"},
            {"options", {{"vocab_size", file.vocab_needed}, {"max_seq_len", file.length}}}};
  }
  const int64_t outputs =
      file.kind == SampleFileKind::regression ? file.outputs : file.classes_needed;
  return {{"name", "mlp"},
          {"options", {{"dims", {file.features, 64, std::max<int64_t>(2, outputs)}}}}};
}

// The model and data sections: the user's files, or the built-in model that fits their data, or
// (neither given) the built-in MLP on generated classification data.
void add_model_and_data(const NewScenarioArgs& args, nlohmann::ordered_json& scenario) {
  if (!args.model_file.empty() && args.data_file.empty()) {
    throw ArgumentError("--data: your own model needs your own samples (a safetensors file of "
                        "\"inputs\" and \"targets\"; docs/your-own-bug.md)");
  }
  if (!args.model_file.empty()) {
    scenario["model"] = {{"name", "torchscript"},
                         {"options", {{"file", relative_to_scenario(args.model_file, args.output)}}}};
  } else {
    scenario["model"] = {{"name", "mlp"}, {"options", nlohmann::ordered_json::object()}};
  }
  if (!args.data_file.empty()) {
    const std::string file = relative_to_scenario(args.data_file, args.output);
    scenario["data"] = {{"name", "safetensors"}, {"options", {{"file", file}}}};
    if (args.model_file.empty()) {
      // Read (and checked) here, at the pointer the scenario will have, to size the model.
      const nlohmann::json options = {{"file", file}};
      ObjectReader reader(options, args.output, "/data/options");
      scenario["model"] = builtin_model_for(std::get<SafetensorsData>(read_safetensors_data(reader)));
    }
  } else {
    scenario["data"] = {{"name", "classification"}, {"options", nlohmann::ordered_json::object()}};
  }
}

// The sections --client-optimizer and --param-groups write, in that order.
std::vector<OptionSection> optimizer_options(const NewScenarioArgs& args) {
  std::vector<OptionSection> options;
  if (!args.client_optimizer.empty()) options.push_back(client_optimizer_option(args.client_optimizer));
  if (!args.param_groups.empty()) options.push_back(parameter_groups_option(args.param_groups));
  return options;
}

nlohmann::ordered_json build_scenario(const NewScenarioArgs& args, int64_t intended_batch,
                                      const std::vector<OptionSection>& options) {
  nlohmann::ordered_json scenario;
  scenario["name"] = args.name.empty() ? name_from_output(args.output) : args.name;
  scenario["description"] =
      args.description.empty()
          ? "Made by `trainrepro new` from " + fs::path(args.ds_config).filename().string() +
                ": say here what this setup should show."
          : args.description;
  scenario["tags"] = {"user"};
  add_model_and_data(args, scenario);
  // Verbatim, in the user's key order (DeepSpeed's messages list keys in it too).
  KeyOrder config_order;
  scenario["deepspeed"] = in_file_order(
      read_json_file(args.ds_config, JsonDialect::deepspeed_config, &config_order), config_order);
  for (const OptionSection& option : options) scenario[option.section] = option.value;
  if (!args.hf_trainer.empty()) scenario["hf_trainer"] = read_json_file(args.hf_trainer);
  if (!args.deepspeed_version.empty()) scenario["deepspeed_version"] = args.deepspeed_version;
  scenario["world_size"] = args.world_size;
  scenario["dtype"] = "float32";
  if (!args.habits.empty()) {
    nlohmann::ordered_json loop = nlohmann::ordered_json::object();
    for (const std::string& habit : args.habits) add_habit(loop, habit);
    scenario["loop"] = loop;
  }
  scenario["golden"] = {{"train_batch_size", intended_batch}, {"steps", args.steps}};
  scenario["expect"] = {{"outcome", "pass"}};
  if (!args.expected_diagnosis.empty()) {
    scenario["expect"] = {{"outcome", "diagnosis"}, {"diagnosis", args.expected_diagnosis}};
  }
  return scenario;
}

// fp16 with dynamic loss scaling: the windows DeepSpeed will skip while the scale comes down
// from 2^initial_scale_power, said and returned, so that the run compares `steps` applied
// updates after them (calibration_probe.h).
int64_t announce_calibration(const Scenario& scenario, const Plan& plan, int64_t steps) {
  if (plan.precision != Precision::fp16 || plan.mixed.fp16.loss_scale != 0.0) return 0;
  const int64_t limit = calibration_probe_limit(plan);
  const std::optional<int64_t> skips = predict_calibration_skips(scenario, plan, limit);
  const std::string start =
      "fp16: DeepSpeed's dynamic loss scale starts at 2^" +
      std::to_string(plan.mixed.fp16.initial_scale_power);
  if (!skips) {
    std::cout << start << " and no window applied within " << limit
              << " (the gradients overflow fp16 at every scale down to min_loss_scale): `run` "
              << "will say so\n";
    return 0;
  }
  if (*skips == 0) return 0;
  std::cout << start << " and halves on each overflowed window: about " << *skips
            << " window" << (*skips == 1 ? "" : "s") << " will be skipped before the first "
            << "update (calibration, not a failure), so golden.steps is " << steps + *skips
            << ": " << steps << " applied updates compared\n";
  return *skips;
}

// The scenario as `run` will load it from the file `new` writes (keys in the written order).
Scenario load_as_written(const nlohmann::ordered_json& scenario, const std::string& output) {
  KeyOrder key_order;
  const nlohmann::json document =
      parse_json_text(scenario.dump(), output, JsonDialect::strict, &key_order);
  return load_scenario_document(document, output, &key_order);
}

// DeepSpeed's resolution of the config in this scenario, printed as `config resolve` prints it:
// the batch it trains with, or its refusal.
std::variant<int64_t, ConfigError> print_resolution(const Scenario& scenario) {
  const PlanResolution resolution = resolve_plan(scenario, Device::cpu);
  if (const auto* error = std::get_if<ConfigError>(&resolution)) {
    std::cout << "DeepSpeed " << scenario.deepspeed.release->version
              << " refuses this config: " << error->message << "\n";
    return *error;
  }
  const ResolvedBatch& batch = std::get<Plan>(resolution).batch;
  std::cout << "DeepSpeed " << scenario.deepspeed.release->version << " trains with "
            << "train_batch_size " << batch.train_batch_size << " = micro-batch "
            << batch.micro_batch_per_gpu << " x gradient_accumulation_steps "
            << batch.gradient_accumulation_steps << " x world size " << batch.world_size << "\n";
  return batch.train_batch_size;
}

// The expectation of a scenario kept as a reproduction of DeepSpeed's refusal.
std::string refusal_expectation(const ConfigError& refusal) {
  return "{\"outcome\": \"config_error\", \"error\": \"" +
         std::string(spelling_of(refusal.kind, config_error_spellings())) + "\"}";
}

// What --intended-batch would do for a config DeepSpeed refuses: nothing about the refusal;
// it only lets `new` write the scenario, which then reproduces the refusal.
std::string refused_without_intended_batch(const ConfigError& refusal) {
  return "nothing written: DeepSpeed refuses this config (above), so no batch trains and there "
         "is none to compare with. Fix the config and run `new` again. To keep the refusal "
         "itself as a scenario (a reproduction of it), pass --intended-batch N, the train batch "
         "size you meant, and set the scenario's \"expect\" to " + refusal_expectation(refusal);
}

}  // namespace

int run_new_scenario(const NewScenarioArgs& args) {
  std::error_code exists_error;
  if (fs::exists(args.output, exists_error) && !args.force) {
    std::cerr << args.output << ": already exists; choose another -o, or pass --force to "
              "replace it\n";
    return kExitBadInput;
  }
  nlohmann::ordered_json scenario;
  Scenario loaded;
  std::vector<OptionSection> options;
  std::optional<ConfigError> refusal;
  try {
    options = optimizer_options(args);
    // First with a placeholder batch: loading reads the config (as `config resolve` does) and
    // the user's files, which say the batch DeepSpeed trains with and the data's shapes.
    scenario = build_scenario(args, args.intended_batch.value_or(1), options);
    Scenario probe = load_as_written(scenario, args.output);
    for (const std::string& warning : probe.deepspeed.warnings) {
      std::cerr << "warning: " << printable(warning_said_by_option(warning, args.output, options))
                << "\n";
    }
    const std::variant<int64_t, ConfigError> resolution = print_resolution(probe);
    const std::optional<int64_t> trained =
        std::holds_alternative<int64_t>(resolution)
            ? std::optional<int64_t>(std::get<int64_t>(resolution))
            : std::nullopt;
    if (const auto* refused = std::get_if<ConfigError>(&resolution)) refusal = *refused;
    if (!args.intended_batch && refusal) {
      std::cerr << refused_without_intended_batch(*refusal) << "\n";
      return kExitBadInput;
    }
    const int64_t intended = args.intended_batch.value_or(trained.value_or(1));
    scenario["golden"]["train_batch_size"] = intended;
    if (trained && *trained != intended) {
      std::cout << "you intend train_batch_size " << intended << ": `trainrepro run` compares "
                << "every step with one batch of " << intended << " and says why they differ\n";
    } else if (!args.intended_batch) {
      std::cout << "golden.train_batch_size " << intended << " (the batch this config trains "
                << "with); if you meant another, pass --intended-batch N\n";
    }
    loaded = load_as_written(scenario, args.output);
    const PlanResolution resolution_of_loaded = resolve_plan(loaded, Device::cpu);
    if (const auto* plan = std::get_if<Plan>(&resolution_of_loaded)) {
      if (const int64_t skips = announce_calibration(loaded, *plan, args.steps); skips > 0) {
        scenario["golden"]["steps"] = args.steps + skips;
        loaded = load_as_written(scenario, args.output);
      }
    }
  } catch (const ScenarioError& error) {
    std::cerr << said_by_option(error, args.output, options) << "\n";
    return kExitBadInput;
  } catch (const ArgumentError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  try {
    write_file_atomically(args.output, scenario.dump(2) + "\n");
  } catch (const std::exception& error) {
    std::cerr << args.output << ": cannot write: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  if (refusal) {
    std::cout << "wrote " << args.output << " (expect: pass, so `run` reports DeepSpeed's refusal "
              << "as a failure; to keep it as a reproduction of the refusal, set \"expect\" to "
              << refusal_expectation(*refusal) << ")\n";
  } else {
    std::cout << "wrote " << args.output
              << (args.expected_diagnosis.empty()
                      ? std::string(" (expect: pass; to keep it as a bug reproduction, set "
                                    "\"expect\" to the diagnosis `run` names)\n")
                      : " (expect: diagnosis " + args.expected_diagnosis + ")\n");
  }
  if (args.write_golden && std::holds_alternative<Plan>(resolve_plan(loaded, Device::cpu))) {
    GoldenArgs golden;
    golden.update = true;
    golden.paths = {args.output};
    golden.golden_dir = args.golden_dir;
    if (const int status = run_golden(golden); status != kExitOk) return status;
  }
  std::cout << "next: trainrepro run " << args.output
            << (args.golden_dir == "golden" ? "" : " --golden-dir " + args.golden_dir) << "\n";
  return kExitOk;
}

}  // namespace trainrepro
