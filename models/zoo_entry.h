// What the model zoo and the data zoo have in common: entries found by name, each reading its
// own options strictly from the scenario.
#pragma once
#include <string>
#include <vector>

#include "harness/json/json_fields.h"

namespace trainrepro {

template <typename Options>
struct ZooEntry {
  const char* name;
  const char* description;
  Options (*read_options)(ObjectReader& options);
  // Whether "seed" means anything: not for a user's file (its weights or samples are fixed),
  // where a seed would be silently ignored, so giving one is an error.
  bool seeded = true;
};

template <typename Options>
const ZooEntry<Options>* find_in_zoo(const std::vector<ZooEntry<Options>>& zoo,
                                     const std::string& name) {
  for (const ZooEntry<Options>& entry : zoo) {
    if (name == entry.name) return &entry;
  }
  return nullptr;
}

// "\"mlp\", \"gpt\"", for "unknown model" messages.
template <typename Options>
std::string names_in_zoo(const std::vector<ZooEntry<Options>>& zoo) {
  std::string names;
  for (const ZooEntry<Options>& entry : zoo) {
    names += (names.empty() ? "\"" : ", \"") + std::string(entry.name) + "\"";
  }
  return names;
}

}  // namespace trainrepro
