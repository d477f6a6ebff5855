// Reads a JSON file strictly: a missing or unreadable file, a syntax error (with line and
// column) or a key given twice in one object is a ScenarioError, never a crash or a guess.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/json/json_fields.h"

namespace trainrepro {

// Scenario files are strict JSON. DeepSpeed reads a ds_config.json file with hjson, which also
// takes comments, optional commas, keys and strings without quotes (harness/json/hjson_reader.h);
// a pasted config may use any of them.
enum class JsonDialect { strict, deepspeed_config };

// `display_path` is how the file is named in messages (as the user gave it). `key_order`, when
// given, receives every object's keys in the file's order (nlohmann::json sorts them).
nlohmann::json read_json_file(const std::string& display_path,
                              JsonDialect dialect = JsonDialect::strict,
                              KeyOrder* key_order = nullptr);

// The same checks on text already in memory (tests, stdin).
nlohmann::json parse_json_text(const std::string& text, const std::string& display_path,
                               JsonDialect dialect = JsonDialect::strict,
                               KeyOrder* key_order = nullptr);

// `value` with every object's keys in the order `key_order` gives (the file's), keys it does
// not know after them: a document written back as the user wrote it.
nlohmann::ordered_json in_file_order(const nlohmann::json& value, const KeyOrder& key_order,
                                     const std::string& pointer = "");

}  // namespace trainrepro
