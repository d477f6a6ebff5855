// A perf run in Google Benchmark's JSON format (what `--benchmark_out_format=json` writes), so
// Google Benchmark's compare.py and other tools read it: "context" (ours under "trainrepro"),
// "benchmarks" with one "iteration" entry per repetition (real_time and cpu_time in ms per
// optimizer step, the other figures as counters) followed by mean/median/stddev/cv aggregates of
// the step time. Fitted scaling exponents go in a top-level "scaling" list the tools ignore.
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/perf/perf_run.h"

namespace trainrepro {

// A file that is not a perf run: "FILE:/benchmarks/3/real_time: expected a number, found …".
class PerfFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

nlohmann::json perf_run_to_json(const PerfRun& run);
// `file` names the source in messages. Aggregate entries are skipped (recomputed from the
// repetitions); iteration entries of one name form a benchmark in the order they appear.
PerfRun perf_run_from_json(const nlohmann::json& document, const std::string& file);
// Reads and parses a file; throws PerfFormatError for a missing file, bad JSON or bad content.
PerfRun read_perf_run(const std::string& file);
// Atomically: the file is the old one or the complete new one, never half-written.
void write_perf_run(const std::string& file, const PerfRun& run);

}  // namespace trainrepro
