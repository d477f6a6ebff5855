// The trainrepro command line: parses arguments (CLI11) and hands over to one command.
#include <CLI/CLI.hpp>

#include <iostream>
#include <vector>

#include "harness/cli/commands.h"
#include "harness/cli/subcommands.h"
#include "harness/cli/thread_budget.h"
#include "harness/scenario/batch_config.h"
#include "harness/verdict/verdict.h"

int main(int argc, char** argv) {
  using namespace trainrepro;
  CLI::App app{
      "trainrepro: reproduction and regression test harness for DeepSpeed-style training.\n"
      "Checks that accumulated gradients equal one large batch's, and that memory stays "
      "bounded step after step."};
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("trainrepro ") + TRAINREPRO_VERSION);
  app.require_subcommand(1);

  // In --help's order; `config` and `perf` only group theirs.
  CLI::App* config = app.add_subcommand("config", "Inspect a DeepSpeed config");
  config->require_subcommand(1);
  std::vector<Subcommand> commands;
  commands.push_back(add_config_resolve(*config));
  commands.push_back(add_new_scenario(app));
  commands.push_back(add_export(app));
  commands.push_back(add_run(app, argc, argv));
  commands.push_back(add_bisect(app));
  commands.push_back(add_watch(app, argc, argv));
  commands.push_back(add_report(app));
  commands.push_back(add_golden(app));
  CLI::App* perf = app.add_subcommand(
      "perf",
      "Performance regression tracking: measure, compare with a statistical verdict, "
      "draw the history");
  perf->require_subcommand(1);
  commands.push_back(add_perf_run(*perf, argc, argv));
  commands.push_back(add_perf_compare(*perf));
  commands.push_back(add_perf_history(*perf));
  commands.push_back(add_rank_run(app, argc, argv));
  commands.push_back(add_rank_measure(app));

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

  // Exactly one subcommand that runs something was parsed (require_subcommand above).
  try {
    for (const Subcommand& command : commands) {
      if (command.app->parsed()) return command.run();
    }
  } catch (const std::exception& error) {
    std::cerr << "trainrepro: internal error: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  return kExitBadInput;
}
