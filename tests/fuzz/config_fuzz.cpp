// libFuzzer target: any bytes given as a scenario or a pasted ds_config.json must end in a parsed
// document or a ScenarioError, never a crash, a hang or unbounded memory. Runs the strict and the
// hjson dialect, then DeepSpeed's config reading and batch resolution at a few world sizes:
// everything a pasted config reaches before training. Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/json/scenario_error.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/plan.h"

using namespace trainrepro;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (JsonDialect dialect : {JsonDialect::strict, JsonDialect::deepspeed_config}) {
    nlohmann::json document;
    try {
      document = parse_json_text(text, "fuzz.json", dialect);
    } catch (const ScenarioError&) {
      continue;
    }
    for (const DeepSpeedRelease& release : known_deepspeed_releases()) {
      try {
        const DeepSpeedConfig config = read_deepspeed_config(document, "fuzz.json", "", release);
        for (int64_t world_size : {int64_t{1}, int64_t{3}, kLargestWorldSize}) {
          (void)resolve_deepspeed_config(config, world_size);
        }
      } catch (const ScenarioError&) {
      }
    }
  }
  return 0;
}
