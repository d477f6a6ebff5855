// Reads a JSON file strictly: a missing or unreadable file, a syntax error (with line and
// column) or a key given twice in one object is a ScenarioError, never a crash or a guess.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace trainrepro {

// Scenario files are strict JSON. DeepSpeed reads a ds_config.json file with hjson, which also
// takes comments, optional commas, keys and strings without quotes (harness/json/hjson_reader.h);
// a pasted config may use any of them.
enum class JsonDialect { strict, deepspeed_config };

// `display_path` is how the file is named in messages (as the user gave it).
nlohmann::json read_json_file(const std::string& display_path,
                              JsonDialect dialect = JsonDialect::strict);

// The same checks on text already in memory (tests, stdin).
nlohmann::json parse_json_text(const std::string& text, const std::string& display_path,
                               JsonDialect dialect = JsonDialect::strict);

}  // namespace trainrepro
