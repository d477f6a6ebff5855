// `perf run`, `perf compare`, `perf history` and the internal `rank-measure`: performance
// measured, compared with a statistical verdict, and drawn over commits.
#include "harness/cli/subcommands.h"

#include <memory>

#include "harness/cli/commands.h"

namespace trainrepro {

Subcommand add_perf_run(CLI::App& perf, int argc, char** argv) {
  struct Parsed {
    PerfRunArgs perf_run_args;
    std::string perf_device;
  };
  auto parsed = std::make_shared<Parsed>();
  PerfRunArgs& perf_run_args = parsed->perf_run_args;
  std::string& perf_device = parsed->perf_device;
  CLI::App* perf_run = perf.add_subcommand(
      "run",
      "Measure every scenario with a \"performance\" section (repetitions interleaved, "
      "each after a calibration kernel); write Google Benchmark JSON");
  perf_run->add_option("PATH", perf_run_args.paths, "scenario files or folders (scenarios/perf)")
      ->required();
  perf_run->add_option("-o,--out", perf_run_args.output,
                       "the JSON file to write, e.g. reports/history/<machine>/<commit>.json");
  perf_run->add_option("--filter", perf_run_args.filter,
                       "only scenarios whose name or file matches this regular expression");
  perf_run->add_option("--device", perf_device, "override every scenario's device: cpu, cuda, auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  perf_run
      ->add_option("--repetitions", perf_run_args.repetitions,
                   "replace every scenario's repetitions (at least 2)")
      ->check(CLI::Range(int64_t{2}, int64_t{1000}));
  perf_run->add_option("--machine", perf_run_args.machine,
                       "the machine's name in the history (default the host name)");
  perf_run
      ->add_option("--plant-slowdown", perf_run_args.planted_slowdown,
                   "stretch every optimizer step by this fraction (0.05 = 5 %), a "
                   "regression of known size for proving `perf compare`")
      ->check(CLI::Range(0.0, 10.0));
  perf_run
      ->add_option("--pin-cpu", perf_run_args.pin_cpu,
                   "measure on this CPU only (`perf compare` runs both builds' reruns on "
                   "one CPU: each virtual CPU of a shared machine has its own neighbours)")
      ->check(CLI::Range(0, 4095));
  perf_run->add_option("--engine", perf_run_args.engines,
                       "reference (the default), deepspeed[==VERSION] or fsdp2, repeatable: "
                       "also measure that engine on each benchmark it can train, in the same "
                       "rounds, and print each step-time ratio (reference over each engine, "
                       "and the second engine over the first)");
  perf_run->add_flag("--take-turns", perf_run_args.take_turns,
                     "run as a worker of `perf compare`'s confirmation: one round of "
                     "repetitions per turn given on file descriptor 3 (not for use by hand)");
  perf_run->footer(
      "Exit codes:\n"
      "  0  measured (and every scaling expectation met)\n"
      "  1  a fitted scaling exponent is outside its expected range\n"
      "  2  bad scenario, nothing to measure, or bad usage\n"
      "  3  a training failed, or the output could not be written\n");
  return {perf_run, [parsed, argc, argv] {
            parsed->perf_run_args.provenance = current_run_provenance(argc, argv);
            parsed->perf_run_args.device = device_choice_from(parsed->perf_device);
            return run_perf_run(parsed->perf_run_args);
          }};
}

Subcommand add_perf_compare(CLI::App& perf) {
  struct Parsed {
    PerfCompareArgs compare_args;
    bool no_confirm = false;
  };
  auto parsed = std::make_shared<Parsed>();
  PerfCompareArgs& compare_args = parsed->compare_args;
  bool& no_confirm = parsed->no_confirm;
  CLI::App* perf_compare = perf.add_subcommand(
      "compare",
      "Compare two perf runs figure by figure (ratio, Mann-Whitney U, Cliff's delta); "
      "confirm a suspected regression by rerunning both builds in turns (A, B, B, A, …)");
  perf_compare->add_option("BASELINE", compare_args.baseline, "the earlier perf run")->required();
  perf_compare->add_option("CURRENT", compare_args.current, "the perf run to judge")->required();
  perf_compare->add_option("--alpha", compare_args.alpha, "significance level (default 0.01)")
      ->check(CLI::Range(1e-9, 0.5));
  perf_compare
      ->add_option("--min-effect", compare_args.min_effect,
                   "smallest change called a regression (default 0.05 = 5 %)")
      ->check(CLI::Range(0.0, 10.0));
  perf_compare
      ->add_option("--screen-alpha", compare_args.screen_alpha,
                   "p below which a change of half the minimum effect is suspected and "
                   "rerun (default 0.05)")
      ->check(CLI::Range(1e-9, 0.5));
  CLI::Option* no_confirm_flag =
      perf_compare->add_flag("--no-confirm", no_confirm,
                             "call regressions (p < alpha, at least the minimum effect) on the two "
                             "files alone, without rerunning the builds");
  perf_compare
      ->add_flag("--rerun-all", compare_args.rerun_all,
                 "rerun every benchmark in turns, suspected or not, and judge on the rerun "
                 "alone (what scripts/nightly-perf does: two runs taken at different "
                 "times differ by up to 10 % on a shared machine)")
      ->excludes(no_confirm_flag);
  perf_compare
      ->add_option("--confirm-repetitions", compare_args.confirm_repetitions,
                   "repetitions per build in the rerun, one round per turn (default 60)")
      ->check(CLI::Range(2, 1000));
  perf_compare->add_option("--baseline-build", compare_args.baseline_build,
                           "the trainrepro that measured BASELINE (default: as recorded in it)");
  perf_compare->add_option("--current-build", compare_args.current_build,
                           "the trainrepro that measured CURRENT (default: as recorded in it)");
  perf_compare->footer(
      "Exit codes:\n"
      "  0  no regression, or none called on the rerun in turns\n"
      "  2  a file is not a perf run (file and JSON pointer named), or bad usage\n"
      "  3  the rerun was not possible: a build is gone, rebuilt or too old to take turns, or\n"
      "     it died or hung (its output printed)\n"
      "  4  a confirmed regression (with --no-confirm: one called on the two files alone)\n");
  return {perf_compare, [parsed] {
            parsed->compare_args.confirm = !parsed->no_confirm;
            return run_perf_compare(parsed->compare_args);
          }};
}

Subcommand add_perf_history(CLI::App& perf) {
  struct Parsed {
    PerfHistoryArgs history_args;
  };
  auto parsed = std::make_shared<Parsed>();
  PerfHistoryArgs& history_args = parsed->history_args;
  CLI::App* perf_history = perf.add_subcommand(
      "history", "Draw every figure of a machine's perf runs over commits, with change points");
  perf_history->add_option("FOLDER", history_args.folder, "reports/history/<machine>")->required();
  perf_history->add_option("-o,--output", history_args.output,
                           "the page (default reports/out/perf-history.html)");
  perf_history->add_option("--alpha", history_args.alpha, "significance level (default 0.01)")
      ->check(CLI::Range(1e-9, 0.5));
  perf_history
      ->add_option("--min-effect", history_args.min_effect,
                   "smallest level shift marked (default 0.05)")
      ->check(CLI::Range(0.0, 10.0));
  perf_history->footer(
      "Exit codes:\n"
      "  0  the page was written from every file\n"
      "  2  no perf runs, or some files were not perf runs (named; the page lists them)\n"
      "  3  the page could not be written\n");
  return {perf_history, [parsed] { return run_perf_history(parsed->history_args); }};
}

Subcommand add_rank_measure(CLI::App& app) {
  struct Parsed {
    RankMeasureArgs rank_measure_args;
    std::string rank_measure_device = "cpu";
  };
  auto parsed = std::make_shared<Parsed>();
  RankMeasureArgs& rank_measure_args = parsed->rank_measure_args;
  std::string& rank_measure_device = parsed->rank_measure_device;
  CLI::App* rank_measure = app.add_subcommand(
      "rank-measure",
      "One rank of a multi-rank perf benchmark, as `perf run` starts it (internal)");
  rank_measure->add_option("SCENARIO", rank_measure_args.scenario_file)->required();
  rank_measure->add_option("--label", rank_measure_args.label)->required();
  rank_measure->add_option("--device", rank_measure_device)->check(CLI::IsMember({"cpu", "cuda"}));
  rank_measure->add_option("--plant-slowdown", rank_measure_args.planted_slowdown)
      ->check(CLI::Range(0.0, 10.0));
  rank_measure->add_option("--rank-cpus", rank_measure_args.rank_cpus);
  rank_measure->add_option("--result-file", rank_measure_args.result_file)->required();
  rank_measure->group("");  // hidden from --help
  return {rank_measure, [parsed] {
            parsed->rank_measure_args.device =
                parsed->rank_measure_device == "cuda" ? Device::cuda : Device::cpu;
            return run_rank_measure(parsed->rank_measure_args);
          }};
}

}  // namespace trainrepro
