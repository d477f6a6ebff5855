// The trainrepro command line's subcommands (CLI11): each adds its options to its parent and
// says what runs it once it is the one parsed. main.cpp adds them in --help's order and runs the
// one parsed; the commands themselves are commands.h's run_* functions.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

#include "harness/scenario/scenario.h"

namespace trainrepro {

inline constexpr const char* kExitCodes =
    "Exit codes:\n"
    "  0  every expectation met (passed, reproduced, or skipped on this machine)\n"
    "  1  an expectation was not met (failed, not-reproduced)\n"
    "  2  bad scenario, bad config or bad usage\n"
    "  3  infrastructure failure (crash, timeout, missing GPU for --device cuda)\n";

// One subcommand that runs something: its parser and what it runs (the exit code returned).
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

// --device as the scenario format spells it; empty (not given) means no override.
inline std::optional<DeviceChoice> device_choice_from(const std::string& spelling) {
  for (const auto& [choice, name] : device_choice_spellings()) {
    if (spelling == name) return choice;
  }
  return std::nullopt;
}

// scenario_subcommands.cpp: inspect a config, write a scenario, its program, its golden.
Subcommand add_config_resolve(CLI::App& app);
Subcommand add_new_scenario(CLI::App& app);
Subcommand add_export(CLI::App& app);
Subcommand add_golden(CLI::App& app);

// run_subcommands.cpp: run and judge scenarios or a watched command, and report them.
Subcommand add_run(CLI::App& app, int argc, char** argv);
Subcommand add_bisect(CLI::App& app);
Subcommand add_watch(CLI::App& app, int argc, char** argv);
Subcommand add_report(CLI::App& app);
Subcommand add_rank_run(CLI::App& app, int argc, char** argv);

// perf_subcommands.cpp: measure, compare and draw performance (`perf` is their parent).
Subcommand add_perf_run(CLI::App& perf, int argc, char** argv);
Subcommand add_perf_compare(CLI::App& perf);
Subcommand add_perf_history(CLI::App& perf);
Subcommand add_rank_measure(CLI::App& app);

}  // namespace trainrepro
