// Turns the paths given to `trainrepro run` (files or folders) into the list of scenario files:
// folders are searched recursively for *.json, in sorted order so runs are reproducible. A file
// reached twice (given twice, or through a link) runs once. A bad entry (a missing path, a
// symlink loop, a dangling link, an unreadable folder) is that entry's error alone: the others
// still run.
#pragma once
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace trainrepro {

struct DiscoveryError {
  std::string path;
  std::string message;  // "PATH: …", ready to print
};

struct DiscoveredScenarios {
  std::vector<std::string> files;
  std::vector<DiscoveryError> errors;
  std::vector<std::string> notes;  // "PATH: given twice (as OTHER); it runs once"
};

DiscoveredScenarios discover_scenarios(const std::vector<std::string>& paths);

// `--filter`, an ECMAScript regular expression on a scenario's name or file; nothing when the
// text is empty. Throws std::invalid_argument "--filter \"(\": not a valid regular expression:
// …" for one that does not compile.
std::optional<std::regex> compile_scenario_filter(const std::string& text);

}  // namespace trainrepro
