#include "harness/scenario/load_scenario.h"

#include <regex>

#include "harness/scenario/json_document.h"
#include "harness/scenario/scenario_error.h"
#include "models/model_data_fit.h"

namespace trainrepro {
namespace {

// Names become result file names (results/<name>.json) and CTest names, so they are
// restricted to characters that are safe in both.
const std::regex& name_pattern() {
  static const std::regex pattern("[a-z0-9][a-z0-9._-]{0,99}");
  return pattern;
}

std::string known_names(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "\"" : ", \"") + name + "\"";
  return list;
}

ModelSpec read_model(ObjectReader& model) {
  ModelSpec spec;
  spec.name = model.required_string("name");
  const ModelEntry* entry = find_model(spec.name);
  if (entry == nullptr) {
    std::vector<std::string> names;
    for (const ModelEntry& known : model_zoo()) names.push_back(known.name);
    model.fail("name", "unknown model \"" + spec.name + "\"; the model zoo has " +
                           known_names(names));
  }
  ObjectReader options = model.optional_object("options");
  spec.options = entry->read_options(options);
  options.reject_unknown_keys();
  spec.seed = model.optional_int("seed", 0, 0);
  model.reject_unknown_keys();
  return spec;
}

DataSpec read_data(ObjectReader& data) {
  DataSpec spec;
  spec.name = data.required_string("name");
  const DataEntry* entry = find_data(spec.name);
  if (entry == nullptr) {
    std::vector<std::string> names;
    for (const DataEntry& known : data_zoo()) names.push_back(known.name);
    data.fail("name", "unknown data generator \"" + spec.name + "\"; available: " +
                          known_names(names));
  }
  ObjectReader options = data.optional_object("options");
  spec.options = entry->read_options(options);
  options.reject_unknown_keys();
  spec.seed = data.optional_int("seed", 0, 0);
  data.reject_unknown_keys();
  return spec;
}

GoldenSpec read_golden(ObjectReader& golden) {
  GoldenSpec spec;
  spec.train_batch_size = golden.required_int("train_batch_size", 1);
  spec.steps = golden.optional_int("steps", spec.steps, 1);
  golden.reject_unknown_keys();
  return spec;
}

std::vector<Requirement> read_requirements(ObjectReader& root) {
  std::vector<Requirement> requirements;
  const std::vector<std::string> spellings = root.optional_string_list("requires");
  for (size_t i = 0; i < spellings.size(); ++i) {
    bool found = false;
    for (const auto& [requirement, name] : requirement_spellings()) {
      if (spellings[i] == name) {
        requirements.push_back(requirement);
        found = true;
      }
    }
    if (!found) {
      root.fail_at("/requires/" + std::to_string(i),
                "expected one of \"cuda\", \"mpi\", found \"" + spellings[i] + "\"");
    }
  }
  return requirements;
}

}  // namespace

const EnumSpellings<DeviceChoice>& device_choice_spellings() {
  static const EnumSpellings<DeviceChoice> spellings = {
      {DeviceChoice::cpu, "cpu"}, {DeviceChoice::cuda, "cuda"}, {DeviceChoice::auto_detect, "auto"}};
  return spellings;
}

const EnumSpellings<Requirement>& requirement_spellings() {
  static const EnumSpellings<Requirement> spellings = {{Requirement::cuda, "cuda"},
                                                       {Requirement::mpi, "mpi"}};
  return spellings;
}

Scenario load_scenario(const std::string& file) {
  const nlohmann::json document = read_json_file(file);
  ObjectReader root(document, file, "");
  Scenario scenario;
  scenario.file = file;

  scenario.name = root.required_string("name");
  if (!std::regex_match(scenario.name, name_pattern())) {
    root.fail("name", "expected lowercase letters, digits, '.', '_' or '-' (it names the results "
                      "file), starting with a letter or digit, at most 100 characters; found \"" +
                          scenario.name + "\"");
  }
  scenario.description = root.required_string("description");
  if (scenario.description.empty()) {
    root.fail("description", "expected a sentence saying what this scenario shows, found \"\"");
  }
  scenario.tags = root.optional_string_list("tags");
  scenario.requires_ = read_requirements(root);

  ObjectReader model = root.required_object("model");
  scenario.model = read_model(model);
  ObjectReader data = root.required_object("data");
  scenario.data = read_data(data);
  if (auto problem = check_model_fits_data(scenario.model.options, scenario.data.options)) {
    const std::string pointer = problem->model_key.empty()
                                    ? "/model/name"
                                    : "/model/options/" + escape_pointer_token(problem->model_key);
    root.fail_at(pointer, problem->message);
  }

  scenario.deepspeed =
      read_deepspeed_config(root.required_value("deepspeed"), file, root.pointer_to("deepspeed"));
  if (!scenario.deepspeed.optimizer) {
    root.fail_at("/deepspeed/optimizer",
                 "required key is missing: trainrepro builds the optimizer from the config (if "
                 "your script passes its own optimizer to deepspeed.initialize, describe it here "
                 "as {\"type\": \"AdamW\", \"params\": {\"lr\": 0.001}})");
  }
  scenario.world_size = root.optional_int("world_size", 1, 1);
  scenario.device =
      root.optional_enum("device", DeviceChoice::cpu, device_choice_spellings());

  ObjectReader loop = root.optional_object("loop");
  loop.reject_unknown_keys();

  ObjectReader golden = root.required_object("golden");
  scenario.golden = read_golden(golden);
  ObjectReader expect = root.required_object("expect");
  scenario.expect = read_expectation(expect);

  root.reject_unknown_keys();
  return scenario;
}

}  // namespace trainrepro
