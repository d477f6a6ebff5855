// Strict scenario loading against a plain nlohmann::json parse of the same file: the price of
// typo detection, source pointers and validation. Compare the two rows' times as a ratio.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "harness/scenario/load_scenario.h"

namespace {

const std::string kScenario =
    std::string(TRAINREPRO_SOURCE_DIR) + "/scenarios/accumulation/batch-mismatch-tb-mb-gas.json";

void BM_PlainJsonParse(benchmark::State& state) {
  for (auto _ : state) {
    std::ifstream in(kScenario);
    std::stringstream text;
    text << in.rdbuf();
    benchmark::DoNotOptimize(nlohmann::json::parse(text.str()));
  }
}
BENCHMARK(BM_PlainJsonParse);

void BM_StrictScenarioLoad(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(trainrepro::load_scenario(kScenario));
}
BENCHMARK(BM_StrictScenarioLoad);

}  // namespace
