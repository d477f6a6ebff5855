#include "harness/cli/scenario_discovery.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "harness/json/printable.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

// The entries of a folder worth reading: *.json regular files (links followed), and an error
// for each *.json entry that cannot be (a link to nowhere, a link loop).
void search_folder(const std::string& folder, DiscoveredScenarios& found) {
  std::vector<std::string> in_folder;
  const size_t first_error = found.errors.size();
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(folder, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->path().extension() != ".json") continue;
    std::error_code entry_error;
    const bool regular = fs::is_regular_file(it->path(), entry_error);
    const std::string path = printable(it->path().string());
    if (entry_error) {
      const bool loop = entry_error == std::errc::too_many_symbolic_link_levels;
      const bool dangling = !loop && it->is_symlink(entry_error);
      found.errors.push_back(
          {path, path + (loop       ? ": a symbolic link loop; not read"
                         : dangling ? ": a symbolic link to nothing (dangling); not read"
                                    : ": cannot read: " + entry_error.message())});
    } else if (regular) {
      in_folder.push_back(it->path().string());
    } else if (it->is_symlink(entry_error)) {
      found.errors.push_back({path, path + ": a symbolic link to nothing (dangling); not read"});
    }
  }
  if (error) {
    found.errors.push_back(
        {folder, printable(folder) + ": cannot list the folder: " + error.message()});
  }
  std::sort(in_folder.begin(), in_folder.end());
  std::sort(found.errors.begin() + static_cast<std::ptrdiff_t>(first_error), found.errors.end(),
            [](const DiscoveryError& a, const DiscoveryError& b) { return a.path < b.path; });
  found.files.insert(found.files.end(), in_folder.begin(), in_folder.end());
}

}  // namespace

DiscoveredScenarios discover_scenarios(const std::vector<std::string>& paths) {
  DiscoveredScenarios found;
  for (const std::string& given : paths) {
    const std::string path = printable(given);
    std::error_code error;
    const fs::file_status status = fs::status(given, error);
    if (error == std::errc::too_many_symbolic_link_levels) {
      found.errors.push_back({path, path + ": a symbolic link loop; not read"});
    } else if (error || !fs::exists(status)) {
      found.errors.push_back({path, path + ": no such file or folder"});
    } else if (fs::is_directory(status)) {
      search_folder(given, found);
    } else {
      found.files.push_back(given);  // a file given by name is read even without .json
    }
  }
  // The same file reached twice would be "already used by" itself: keep the first.
  std::map<std::string, std::string> first_as;
  std::vector<std::string> unique;
  for (const std::string& file : found.files) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(file, error);
    const std::string identity = error ? file : canonical.string();
    const auto [it, inserted] = first_as.emplace(identity, file);
    if (inserted) {
      unique.push_back(file);
    } else {
      found.notes.push_back(file + ": given twice (as " + it->second + "); it runs once");
    }
  }
  found.files = std::move(unique);
  return found;
}

std::optional<std::regex> compile_scenario_filter(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    return std::regex(text, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    throw std::invalid_argument("--filter \"" + text +
                                "\": not a valid regular expression: " + error.what());
  }
}

}  // namespace trainrepro
