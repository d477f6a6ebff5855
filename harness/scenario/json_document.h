// Reads a JSON file strictly: a missing or unreadable file, a syntax error (with line and
// column) or a key given twice in one object is a ScenarioError, never a crash or a guess.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace trainrepro {

// `display_path` is how the file is named in messages (as the user gave it).
nlohmann::json read_json_file(const std::string& display_path);

// The same checks on text already in memory (tests, stdin).
nlohmann::json parse_json_text(const std::string& text, const std::string& display_path);

}  // namespace trainrepro
