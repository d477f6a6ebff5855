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

std::string line_and_column(const std::string& text, size_t byte_offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < byte_offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

ScenarioError::ScenarioError(std::string file, std::string location, std::string message)
    : std::runtime_error(format_located(file, location, message)),
      file_(std::move(file)),
      location_(std::move(location)),
      message_(std::move(message)) {}

}  // namespace trainrepro
