// The subcommands of the trainrepro CLI. Each returns the process exit code (see ExitCode).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/report/run_provenance.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

struct ConfigResolveArgs {
  std::string config_file;
  int64_t world_size = 1;
  std::string deepspeed_version;  // empty: the newest release the harness knows
};
int run_config_resolve(const ConfigResolveArgs& args);

// `trainrepro new`: a scenario from a user's own ds_config.json (new_scenario_command.cpp).
struct NewScenarioArgs {
  std::string ds_config;
  std::string output;
  std::string name;                 // empty: from the output file's name
  std::string model_file;           // a TorchScript file; empty: a built-in model
  std::string data_file;            // a safetensors file of samples; empty: generated data
  std::string hf_trainer;           // a JSON file of TrainingArguments fields; empty: none
  std::string deepspeed_version;    // empty: the scenario format's default
  std::vector<std::string> habits;  // "KEY=VALUE" loop keys
  std::string client_optimizer;     // compact spelling or a .json file (new_optimizer_options.h)
  std::string param_groups;         // compact spelling or a .json file; empty: none
  int64_t world_size = 1;
  std::optional<int64_t> intended_batch;  // empty: the batch the config trains with
  int64_t steps = 4;
  std::string description;         // empty: a line saying where the scenario came from
  std::string expected_diagnosis;  // empty: "expect" is a pass
  bool force = false;              // replace an existing output file
  bool write_golden = true;        // compute the golden once the scenario is written
  std::string golden_dir = "golden";
};
int run_new_scenario(const NewScenarioArgs& args);

// `trainrepro export SCENARIO --python -o repro.py` (export_command.cpp).
struct ExportArgs {
  std::string scenario_file;
  std::string output;
  bool force = false;  // replace an existing output file
};
int run_export(const ExportArgs& args);

struct RunArgs {
  std::vector<std::string> paths;
  std::string golden_dir = "golden";
  std::string results_dir;  // empty: no results files
  std::string filter;       // ECMAScript regex on scenario name or file; empty: all
  std::optional<DeviceChoice> device;
  int rank_timeout_seconds = 600;
  bool allow_large = false;          // run scenarios the resource check refuses
  std::string junit_file;            // empty: no JUnit XML
  std::string engine = "reference";  // --engine: or "deepspeed", "deepspeed==0.18.6"
  // A Python engine's ranks kept across scenarios (the default); --fresh-workers: new ones for
  // every scenario. --serve-workers, once the opt-in, is kept for the scripts that pass it.
  bool serve_workers = false;
  bool fresh_workers = false;
  RunProvenance provenance;  // written into every results file
};
int run_scenarios(const RunArgs& args);

// `trainrepro watch -- COMMAND…`: the user's own training script, watched (watch_command.cpp).
struct WatchArgs {
  std::vector<std::string> command;
  int64_t steps = 4;                      // optimizer steps judged
  int64_t memory_steps = 40;              // optimizer steps memory is sampled at (0: none)
  std::optional<int64_t> intended_batch;  // empty: what DeepSpeed resolved
  std::string results_file;               // empty: none written
  int timeout_seconds = 3600;
  std::string save_scenario;               // empty: none; else the scenario file to write
  std::string loss = "auto";               // the golden's loss (--loss)
  std::string golden = "own";              // --golden: own (the run's dtype) or float64
  int64_t coordinates = int64_t{1} << 18;  // --coordinates: judged per window (0: all)
  std::string junit_file;                  // empty: no JUnit XML
  std::string html_file;                   // empty: no HTML page
  std::string golden_dir = "golden";       // where the saved scenario's golden goes
  RunProvenance provenance;                // written into the results and JUnit files
};
int run_watch(const WatchArgs& args);

struct BisectArgs {
  std::string scenario_file;
  std::string engine = "deepspeed";  // the only engine with releases to search
  std::string good;                  // a release whose outcome is the good one
  std::string bad;                   // a later release whose outcome differs
  std::string golden_dir = "golden";
  int rank_timeout_seconds = 600;
};
int run_bisect(const BisectArgs& args);

struct ReportArgs {
  std::vector<std::string> paths;  // results folders or files
  std::string output = "reports/out/report.html";
  std::string perf_history;  // a machine's history folder to draw too (reports/history/<machine>)
};
int run_report(const ReportArgs& args);

struct GoldenArgs {
  bool update = false;       // else: check
  bool allow_large = false;  // compute goldens the resource check refuses
  std::vector<std::string> paths = {"scenarios"};
  std::string golden_dir = "golden";
};
int run_golden(const GoldenArgs& args);

struct RankRunArgs {
  std::string scenario_file;
  std::string result_file;
  std::string golden_dir = "golden";
  std::optional<DeviceChoice> device;
  RunProvenance provenance;
};
int run_rank(const RankRunArgs& args);

struct RankMeasureArgs {
  std::string scenario_file;  // the planned scenario's JSON, written by `perf run`
  std::string label;          // how messages name it: the user's file (and swept value)
  Device device = Device::cpu;
  double planted_slowdown = 0.0;
  std::string rank_cpus;    // "1,0": rank r runs on the r-th; empty: not pinned
  std::string result_file;  // rank 0's one-repetition perf run
};
int run_rank_measure(const RankMeasureArgs& args);

struct PerfRunArgs {
  std::vector<std::string> paths;
  std::string output;  // the Google Benchmark JSON file to write (atomically)
  std::string filter;  // ECMAScript regex on scenario name or file
  std::optional<DeviceChoice> device;
  std::optional<int64_t> repetitions;  // replaces every scenario's
  double planted_slowdown = 0.0;  // proving `perf compare`: stretch every step by this fraction
  bool take_turns = false;        // a worker of `perf compare`'s confirmation (turn_taking.h)
  std::optional<int> pin_cpu;     // measure on this CPU only (cpu_pinning.h)
  std::string machine;            // the history's machine name (default the host name)
  // Each --engine: "reference" (always measured), "deepspeed", "deepspeed==VERSION" or
  // "fsdp2": each benchmark the engine can train is measured again by it, beside trainrepro's,
  // in the same rounds (engine_perf.h).
  std::vector<std::string> engines;
  RunProvenance provenance;
};
int run_perf_run(const PerfRunArgs& args);

struct PerfCompareArgs {
  std::string baseline;
  std::string current;
  double alpha = 0.01;
  double min_effect = 0.05;
  bool confirm = true;
  double screen_alpha = 0.05;
  bool rerun_all = false;  // rerun every benchmark in turns, not only the suspected ones
  int confirm_repetitions = 60;
  std::string baseline_build;
  std::string current_build;
};
int run_perf_compare(const PerfCompareArgs& args);

struct PerfHistoryArgs {
  std::string folder;  // reports/history/<machine>: one perf run per commit
  std::string output = "reports/out/perf-history.html";
  double alpha = 0.01;
  double min_effect = 0.05;
};
int run_perf_history(const PerfHistoryArgs& args);

}  // namespace trainrepro
