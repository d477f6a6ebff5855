// Turns the paths given to `trainrepro run` (files or folders) into the list of scenario files:
// folders are searched recursively for *.json, in sorted order so runs are reproducible.
#pragma once
#include <string>
#include <vector>

namespace trainrepro {

struct DiscoveredScenarios {
  std::vector<std::string> files;
  std::vector<std::string> errors;  // "PATH: does not exist", one per bad path
};

DiscoveredScenarios discover_scenarios(const std::vector<std::string>& paths);

}  // namespace trainrepro
