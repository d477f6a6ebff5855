#include "harness/cli/scenario_discovery.h"

#include <algorithm>
#include <filesystem>

namespace trainrepro {

DiscoveredScenarios discover_scenarios(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  DiscoveredScenarios found;
  for (const std::string& path : paths) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status)) {
      found.errors.push_back(path + ": no such file or folder");
    } else if (fs::is_directory(status)) {
      std::vector<std::string> in_folder;
      for (auto it = fs::recursive_directory_iterator(path, error);
           !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
        if (it->is_regular_file() && it->path().extension() == ".json") {
          in_folder.push_back(it->path().string());
        }
      }
      if (error) found.errors.push_back(path + ": cannot list the folder: " + error.message());
      std::sort(in_folder.begin(), in_folder.end());
      found.files.insert(found.files.end(), in_folder.begin(), in_folder.end());
    } else {
      found.files.push_back(path);  // a file given by name is read even without .json
    }
  }
  return found;
}

}  // namespace trainrepro
