// Prints what trainrepro reads from a DeepSpeed config file (hjson), as one line of JSON:
// {"value": …} or {"error": "…"}. tests/json/hjson_cross_check.py compares it with hjson-py.
#include <iostream>

#include <nlohmann/json.hpp>

#include "harness/json/scenario_error.h"
#include "harness/scenario/json_document.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: hjson_dump FILE\n";
    return 2;
  }
  try {
    const nlohmann::json value =
        trainrepro::read_json_file(argv[1], trainrepro::JsonDialect::deepspeed_config);
    std::cout << nlohmann::json{{"value", value}}.dump() << "\n";
  } catch (const trainrepro::ScenarioError& error) {
    std::cout << nlohmann::json{{"error", error.what()}}.dump() << "\n";
  }
  return 0;
}
