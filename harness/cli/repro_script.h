// The Python program `trainrepro export --python` writes (exports/repro_main.py filled in). It
// has two parts: the frame, which is trainrepro's own text only (the template, its version, the
// oracle's zoo.py and ds_worker.py), and one JSON text holding everything that comes from the
// scenario, written as Python string literals by python_string_literal: data that json.loads
// reads back, never code or docstring text, whatever a shared scenario holds.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/scenario/scenario.h"

namespace trainrepro {

// Where the frame holds the scenario's data: a line of its own inside `json.loads(` … `)`.
extern const char kExportedDataPlaceholder[];

// Why this scenario cannot be exported ("file:/pointer: reason"), or nothing when it can.
std::optional<std::string> not_exportable(const Scenario& scenario, const nlohmann::json& raw);

// The template with trainrepro's own parts filled in and kExportedDataPlaceholder, once, where
// the data goes. It takes nothing from a scenario.
std::string repro_script_frame();

// What the script reads as EXPORTED: the scenario file's JSON (`raw`), the file it came from
// (bytes that are not UTF-8 shown as U+FFFD) and what trainrepro expects of it.
nlohmann::json exported_data(const Scenario& scenario, const nlohmann::json& raw,
                             const std::string& source_file);

// The placeholder's replacement: the JSON text of `data`, one indented Python string literal
// per line of its text (Python joins adjacent literals into one string).
std::string exported_data_literals(const nlohmann::json& data);

// The whole program: the frame with the data's literals in place.
std::string repro_script(const nlohmann::json& data);

}  // namespace trainrepro
