// The trainrepro command line: parses arguments (CLI11) and hands over to one command.
#include <CLI/CLI.hpp>

#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/thread_budget.h"
#include "harness/scenario/batch_config.h"
#include "harness/verdict/verdict.h"

namespace {

constexpr const char* kExitCodes =
    "Exit codes:\n"
    "  0  every expectation met (passed, reproduced, or skipped on this machine)\n"
    "  1  an expectation was not met (failed, not-reproduced)\n"
    "  2  bad scenario, bad config or bad usage\n"
    "  3  infrastructure failure (crash, timeout, missing GPU for --device cuda)\n";

// --device as the scenario format spells it; empty (not given) means no override.
std::optional<trainrepro::DeviceChoice> device_choice_from(const std::string& spelling) {
  for (const auto& [choice, name] : trainrepro::device_choice_spellings()) {
    if (spelling == name) return choice;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainrepro;
  CLI::App app{
      "trainrepro: reproduction and regression test harness for DeepSpeed-style training.\n"
      "Checks that accumulated gradients equal one large batch's, and that memory stays "
      "bounded step after step."};
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("trainrepro ") + TRAINREPRO_VERSION);
  app.require_subcommand(1);

  CLI::App* config = app.add_subcommand("config", "Inspect a DeepSpeed config");
  config->require_subcommand(1);
  ConfigResolveArgs resolve_args;
  CLI::App* resolve = config->add_subcommand(
      "resolve",
      "Resolve train_batch_size, train_micro_batch_size_per_gpu and "
      "gradient_accumulation_steps as DeepSpeed does; prints them as JSON, or DeepSpeed's own "
      "error message and exit 2");
  resolve->add_option("DS_CONFIG", resolve_args.config_file, "the ds_config.json")->required();
  resolve->add_option("--world-size", resolve_args.world_size, "data-parallel ranks (default 1)")
      ->check(CLI::Range(int64_t{1}, kLargestWorldSize));
  resolve->add_option("--deepspeed-version", resolve_args.deepspeed_version,
                      "the DeepSpeed release whose rules apply (default the newest known)");
  resolve->footer(kExitCodes);

  RunArgs run_args;
  std::string device;
  CLI::App* run = app.add_subcommand(
      "run", "Run scenarios (files, or folders searched for *.json) and judge each one");
  run->add_option("PATH", run_args.paths, "scenario files or folders")->required();
  run->add_option("--results", run_args.results_dir, "write DIR/<scenario-name>.json for each");
  run->add_option("--filter", run_args.filter,
                  "only scenarios whose name or file matches this regular expression");
  run->add_option("--device", device, "override every scenario's device: cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  run->add_option("--golden-dir", run_args.golden_dir, "where goldens are read (default golden)");
  run->add_option("--rank-timeout", run_args.rank_timeout_seconds,
                  "seconds a multi-rank scenario may take before its ranks are killed (600)")
      ->check(CLI::PositiveNumber);
  run->add_flag("--allow-large", run_args.allow_large,
                "run scenarios that need more memory, processes or time than this machine "
                "gives (refused with exit 2 otherwise)");
  run->add_option("--junit", run_args.junit_file,
                  "write the run as JUnit XML (one testsuite per scenario folder) to FILE");
  run->footer(kExitCodes);

  ReportArgs report_args;
  CLI::App* report = app.add_subcommand(
      "report",
      "Write one self-contained HTML page (summary, scenario table, curves) from results files");
  report->add_option("RESULTS", report_args.paths,
                     "results folders (searched for *.json) or files, from `run --results`")
      ->required();
  report->add_option("-o,--output", report_args.output,
                     "the page to write (default reports/out/report.html)");
  report->footer(
      "Exit codes:\n"
      "  0  the page was written from every file given\n"
      "  2  no results found, or some files were not results files (named on stderr; the page\n"
      "     is written from the others and lists them)\n"
      "  3  the page could not be written\n");

  GoldenArgs golden_args;
  CLI::App* golden = app.add_subcommand(
      "golden",
      "Write (--update) or verify (--check) the golden reference files of scenarios; `run` only "
      "reads them");
  golden->add_option("PATH", golden_args.paths, "scenario files or folders (default scenarios)");
  auto* update = golden->add_flag("--update", golden_args.update,
                                  "compute and write the goldens (float64, CPU), atomically");
  bool check = false;
  auto* check_flag =
      golden->add_flag("--check", check, "verify every golden exists, matches and is intact");
  update->excludes(check_flag);
  golden->add_option("--golden-dir", golden_args.golden_dir, "default golden");
  golden->add_flag("--allow-large", golden_args.allow_large,
                   "compute goldens that need more memory or time than this machine gives");
  golden->footer(kExitCodes);

  RankRunArgs rank_args;
  std::string rank_device;
  CLI::App* rank_run = app.add_subcommand(
      "rank-run", "One rank of a multi-rank scenario, as started by mpirun or srun (internal)");
  rank_run->add_option("SCENARIO", rank_args.scenario_file)->required();
  rank_run->add_option("--result-file", rank_args.result_file)->required();
  rank_run->add_option("--golden-dir", rank_args.golden_dir);
  rank_run->add_option("--device", rank_device)->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  rank_run->group("");  // hidden from --help

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    app.exit(error);  // prints the message and usage
    return kExitBadInput;
  }

  try {
    cap_torch_threads();
  } catch (const std::invalid_argument& error) {
    std::cerr << "trainrepro: " << error.what() << "\n";
    return kExitBadInput;
  }

  try {
    if (resolve->parsed()) return run_config_resolve(resolve_args);
    if (report->parsed()) return run_report(report_args);
    if (rank_run->parsed()) {
      rank_args.provenance = current_run_provenance(argc, argv);
      rank_args.device = device_choice_from(rank_device);
      return run_rank(rank_args);
    }
    if (golden->parsed()) {
      if (!golden_args.update && !check) {
        std::cerr << "trainrepro golden: say --update or --check\n";
        return kExitBadInput;
      }
      return run_golden(golden_args);
    }
    if (run->parsed()) {
      run_args.provenance = current_run_provenance(argc, argv);
      run_args.device = device_choice_from(device);
      return run_scenarios(run_args);
    }
  } catch (const std::exception& error) {
    std::cerr << "trainrepro: internal error: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  return kExitBadInput;
}
