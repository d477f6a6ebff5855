#include "harness/files/install_locations.h"

#include <cstdlib>

namespace trainrepro {
namespace {

std::string environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace

std::string torch_python_executable() {
  const std::string chosen = environment_value("TRAINREPRO_TORCH_PYTHON");
  return chosen.empty() ? TRAINREPRO_TORCH_PYTHON_DEFAULT : chosen;
}

std::string trainrepro_cache_directory() {
  if (std::string cache = environment_value("TRAINREPRO_CACHE"); !cache.empty()) return cache;
  if (std::string xdg = environment_value("XDG_CACHE_HOME"); !xdg.empty()) {
    return xdg + "/trainrepro";
  }
  const std::string home = environment_value("HOME");
  return (home.empty() ? std::string("/tmp") : home) + "/.cache/trainrepro";
}

}  // namespace trainrepro
