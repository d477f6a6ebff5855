#include "harness/cli/new_optimizer_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "harness/json/json_fields.h"
#include "harness/json/printable.h"
#include "harness/scenario/json_document.h"

namespace trainrepro {
namespace {

bool names_a_json_file(const std::string& value) {
  return value.size() > 5 && value.compare(value.size() - 5, 5, ".json") == 0;
}

// The section as the file holds it, in the file's key order; the file's own errors (missing,
// not JSON) name the option first.
OptionSection read_section_file(const std::string& option, const std::string& section,
                                const std::string& path) {
  OptionSection read{option, section, path, path, {}, {}};
  try {
    KeyOrder key_order;
    read.value = in_file_order(read_json_file(path, JsonDialect::strict, &key_order), key_order);
  } catch (const ScenarioError& error) {
    throw ArgumentError(option + " " + error.what());
  }
  return read;
}

// "3e-4", "0.1", ".5", "10": a finite number (an integer stays one), or nothing.
std::optional<nlohmann::ordered_json> number_from(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const bool integer = text.find_first_not_of("+-0123456789") == std::string::npos;
  errno = 0;
  char* end = nullptr;
  if (integer) {
    const long long number = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || errno != 0) return std::nullopt;
    return nlohmann::ordered_json(static_cast<int64_t>(number));
  }
  const double number = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno != 0 || !std::isfinite(number)) return std::nullopt;
  return nlohmann::ordered_json(number);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

// One KEY=VALUE of the compact spelling. What a key takes is torch.optim's: betas a pair,
// nesterov a flag, the others numbers; the loader then checks ranges and which keys exist.
nlohmann::ordered_json optimizer_param(const std::string& key, const std::string& value) {
  const std::string where = "--client-optimizer: '" + key + "' ";
  if (key == "betas") {
    const std::vector<std::string> parts = split(value, ',');
    nlohmann::ordered_json betas = nlohmann::ordered_json::array();
    for (const std::string& part : parts) {
      const auto number = number_from(part);
      if (!number) break;
      betas.push_back(*number);
    }
    if (parts.size() != 2 || betas.size() != 2) {
      throw ArgumentError(where + "expects two numbers, found '" + value + "' (write betas=0.9,0.999)");
    }
    return betas;
  }
  if (value == "true" || value == "false") return value == "true";
  if (const auto number = number_from(value)) return *number;
  throw ArgumentError(where + (key == "nesterov" ? "expects true or false" : "expects a number") +
                      ", found '" + value + "'");
}

// What pointer (within the section) `location` is under, of those the user wrote something for.
const std::string* written_for(const OptionSection& option, std::string pointer) {
  while (true) {
    const auto found = option.written_at.find(pointer);
    if (found != option.written_at.end()) return &found->second;
    const size_t slash = pointer.rfind('/');
    if (slash == std::string::npos || pointer.empty()) return nullptr;
    pointer = pointer.substr(0, slash);
  }
}

// "file", "/client_optimizer/params/betas", "message" → the option's words, or nothing when no
// option wrote that section.
std::optional<std::string> in_option_terms(const std::string& file, const std::string& location,
                                           const std::string& message,
                                           const std::string& scenario_file,
                                           const std::vector<OptionSection>& options) {
  if (file != scenario_file) return std::nullopt;
  for (const OptionSection& option : options) {
    const std::string prefix = "/" + option.section;
    if (location.compare(0, prefix.size(), prefix) != 0 ||
        (location.size() > prefix.size() && location[prefix.size()] != '/')) {
      continue;
    }
    const std::string inside = location.substr(prefix.size());
    if (!option.json_file.empty()) {
      return option.option + " " + option.json_file + (inside.empty() ? "" : ":" + inside) + ": " +
             message;
    }
    const std::string* written = written_for(option, inside);
    return option.option + ": '" + (written ? *written : option.written) + "': " + message;
  }
  return std::nullopt;
}

}  // namespace

OptionSection client_optimizer_option(const std::string& value) {
  const std::string option = "--client-optimizer";
  if (names_a_json_file(value)) return read_section_file(option, "client_optimizer", value);
  std::istringstream words(value);
  std::string type;
  words >> type;
  if (type.empty() || type.find('=') != std::string::npos) {
    throw ArgumentError(option + ": expected the torch.optim class first (AdamW, Adam or SGD), "
                        "then KEY=VALUE pairs, as in 'AdamW lr=3e-4 weight_decay=0.1 "
                        "betas=0.9,0.95', or a .json file of the client_optimizer section; "
                        "found '" + value + "'");
  }
  OptionSection read{option, "client_optimizer", value, "", {}, {}};
  read.value["type"] = type;
  read.written_at["/type"] = type;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (std::string pair; words >> pair;) {
    const size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == pair.size()) {
      throw ArgumentError(option + ": expected KEY=VALUE after the class (lr=3e-4), found '" +
                          pair + "'");
    }
    const std::string key = pair.substr(0, equals);
    if (params.contains(key)) throw ArgumentError(option + ": '" + key + "' is given twice");
    params[key] = optimizer_param(key, pair.substr(equals + 1));
    read.written_at["/params/" + escape_pointer_token(key)] = pair;
  }
  if (!params.empty()) read.value["params"] = params;
  return read;
}

OptionSection parameter_groups_option(const std::string& value) {
  const std::string option = "--param-groups";
  if (names_a_json_file(value)) return read_section_file(option, "parameter_groups", value);
  const std::string idiom = "no_decay=";
  if (value.compare(0, idiom.size(), idiom) != 0) {
    throw ArgumentError(option + ": expected no_decay=SUBSTRING,… (parameters whose names "
                        "contain one get weight_decay 0, the others the optimizer's), as in "
                        "'no_decay=bias,LayerNorm.weight', or a .json file of the "
                        "parameter_groups array; found '" + value + "'");
  }
  const std::vector<std::string> parts = split(value.substr(idiom.size()), ',');
  std::set<std::string> seen;
  if (parts.empty()) {
    throw ArgumentError(option + ": 'no_decay' expects substrings of parameter names separated "
                        "by commas, found none");
  }
  for (const std::string& part : parts) {
    if (part.empty() || part.find_first_of(" \t") != std::string::npos) {
      throw ArgumentError(option + ": 'no_decay' expects substrings of parameter names "
                          "separated by commas, without spaces or empty ones; found '" +
                          value.substr(idiom.size()) + "'");
    }
    if (!seen.insert(part).second) {
      throw ArgumentError(option + ": '" + part + "' is given twice");
    }
  }
  OptionSection read{option, "parameter_groups", value, "", {}, {}};
  // The idiom's order: the decayed group first (DeepSpeedExamples' optimizer_grouped_parameters).
  read.value = nlohmann::ordered_json::array();
  read.value.push_back(nlohmann::ordered_json::object());
  read.value.push_back({{"names_containing", parts}, {"weight_decay", 0.0}});
  read.written_at["/1"] = value;
  for (size_t i = 0; i < parts.size(); ++i) {
    read.written_at["/1/names_containing/" + std::to_string(i)] = parts[i];
  }
  return read;
}

std::string said_by_option(const ScenarioError& error, const std::string& scenario_file,
                           const std::vector<OptionSection>& options) {
  const auto said = in_option_terms(error.file(), error.location(), error.message(),
                                    scenario_file, options);
  return said ? printable(*said) : std::string(error.what());
}

std::string warning_said_by_option(const std::string& warning, const std::string& scenario_file,
                                   const std::vector<OptionSection>& options) {
  const std::string prefix = scenario_file + ":/";
  if (warning.compare(0, prefix.size(), prefix) != 0) return warning;
  const size_t end = warning.find(": ", prefix.size());
  if (end == std::string::npos) return warning;
  const std::string location = warning.substr(prefix.size() - 1, end - prefix.size() + 1);
  return in_option_terms(scenario_file, location, warning.substr(end + 2), scenario_file, options)
      .value_or(warning);
}

}  // namespace trainrepro
