#include "harness/json/scenario_error.h"

#include <utility>

#include "harness/json/printable.h"

namespace trainrepro {
namespace {

std::string format_located(const std::string& file, const std::string& location,
                           const std::string& message) {
  if (location.empty()) return printable(file + ": " + message);
  return printable(file + ":" + location + ": " + message);
}

}  // namespace

ScenarioError::ScenarioError(std::string file, std::string location, std::string message)
    : std::runtime_error(format_located(file, location, message)),
      file_(std::move(file)),
      location_(std::move(location)),
      message_(std::move(message)) {}

}  // namespace trainrepro
