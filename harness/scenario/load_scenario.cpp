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

// Reads {"name", "options", "seed"} against a zoo; `what` is "model" or "data generator".
template <typename Options>
ZooChoice<Options> read_zoo_choice(ObjectReader& section,
                                   const std::vector<ZooEntry<Options>>& zoo,
                                   const std::string& what) {
  ZooChoice<Options> choice;
  choice.name = section.required_string("name");
  const ZooEntry<Options>* entry = find_in_zoo(zoo, choice.name);
  if (entry == nullptr) {
    section.fail("name", "unknown " + what + " \"" + choice.name + "\"; available: " +
                             names_in_zoo(zoo));
  }
  ObjectReader options = section.optional_object("options");
  choice.options = entry->read_options(options);
  options.reject_unknown_keys();
  choice.seed = section.optional_int("seed", 0, 0);
  section.reject_unknown_keys();
  return choice;
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
  scenario.model = read_zoo_choice(model, model_zoo(), "model");
  ObjectReader data = root.required_object("data");
  scenario.data = read_zoo_choice(data, data_zoo(), "data generator");
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
