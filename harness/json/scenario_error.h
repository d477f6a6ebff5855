// An error in a file the user wrote (a scenario, a DeepSpeed config), located precisely enough
// to fix without searching: `scenarios/x.json:/deepspeed/train_batch_size: expected …, found …`.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

namespace trainrepro {

// "line:column" (both from 1) of a byte offset into `text`: parsers count bytes, people count
// lines.
std::string line_and_column(const std::string& text, size_t byte_offset);

class ScenarioError : public std::runtime_error {
 public:
  // `location` is a JSON pointer ("/golden/steps"), a "line:column", or empty for the whole file.
  ScenarioError(std::string file, std::string location, std::string message);

  const std::string& file() const { return file_; }
  const std::string& location() const { return location_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string location_;
  std::string message_;
};

}  // namespace trainrepro
