#include "harness/scenario/scenario_error.h"

#include <utility>

namespace trainrepro {
namespace {

std::string format_located(const std::string& file, const std::string& location,
                           const std::string& message) {
  if (location.empty()) return file + ": " + message;
  return file + ":" + location + ": " + message;
}

}  // namespace

ScenarioError::ScenarioError(std::string file, std::string location, std::string message)
    : std::runtime_error(format_located(file, location, message)),
      file_(std::move(file)),
      location_(std::move(location)),
      message_(std::move(message)) {}

}  // namespace trainrepro
