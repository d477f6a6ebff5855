// libFuzzer target: any bytes given as a scenario file must load or end in a located
// ScenarioError, never a crash, a hang or unbounded memory: JSON reading, every section's strict
// reader, the model and data zoos' options, their fit, the DeepSpeed config and its release.
// Seeded with every shipped scenario. Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/json/scenario_error.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"

using namespace trainrepro;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)load_scenario_document(parse_json_text(text, "fuzz.json"), "fuzz.json");
  } catch (const ScenarioError&) {
  }
  return 0;
}
