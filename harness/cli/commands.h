// The subcommands of the trainrepro CLI. Each returns the process exit code (see ExitCode).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/report/run_provenance.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

struct ConfigResolveArgs {
  std::string config_file;
  int64_t world_size = 1;
  std::string deepspeed_version;  // empty: the newest release the harness knows
};
int run_config_resolve(const ConfigResolveArgs& args);

struct RunArgs {
  std::vector<std::string> paths;
  std::string golden_dir = "golden";
  std::string results_dir;  // empty: no results files
  std::string filter;       // ECMAScript regex on scenario name or file; empty: all
  std::optional<DeviceChoice> device;
  int rank_timeout_seconds = 600;
  bool allow_large = false;  // run scenarios the resource check refuses
  std::string junit_file;    // empty: no JUnit XML
  RunProvenance provenance;  // written into every results file
};
int run_scenarios(const RunArgs& args);

struct ReportArgs {
  std::vector<std::string> paths;  // results folders or files
  std::string output = "reports/out/report.html";
};
int run_report(const ReportArgs& args);

struct GoldenArgs {
  bool update = false;  // else: check
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

}  // namespace trainrepro
