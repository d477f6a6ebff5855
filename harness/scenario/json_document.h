// Reads a JSON file strictly: a missing or unreadable file, a syntax error (with line and
// column) or a key given twice in one object is a ScenarioError, never a crash or a guess.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace trainrepro {

// Scenario files are strict JSON. DeepSpeed reads a ds_config.json with hjson, which also takes
// comments (#, //, /* */) and trailing commas; a pasted config may have them.
enum class JsonDialect { strict, deepspeed_config };

// `display_path` is how the file is named in messages (as the user gave it).
nlohmann::json read_json_file(const std::string& display_path,
                              JsonDialect dialect = JsonDialect::strict);

// The same checks on text already in memory (tests, stdin).
nlohmann::json parse_json_text(const std::string& text, const std::string& display_path,
                               JsonDialect dialect = JsonDialect::strict);

// The text with comments and trailing commas replaced by spaces, outside strings, so that lines
// and columns in later messages still point into the user's file.
std::string blank_out_comments_and_trailing_commas(std::string text);

}  // namespace trainrepro
