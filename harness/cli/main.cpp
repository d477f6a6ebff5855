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

constexpr const char* kDeepSpeedEngineNote =
    "\n--engine deepspeed: the same golden, judges and reports, with the real DeepSpeed training\n"
    "each scenario on the CPU (DS_ACCELERATOR=cpu unless set), one Python process per rank\n"
    "(gloo), fp32 and bf16. Skipped with the reason: CUDA, fp16 (DeepSpeed's loss scaling on a\n"
    "CPU is not a GPU's), Lamb (no CPU kernel), TorchScript models (DeepSpeed hooks the model's\n"
    "modules, which a ScriptModule refuses), the loop's own clip_grad_norm, memory figures the\n"
    "census cannot give (a peak budget, ZeRO-3 gathered parameters). Config errors are judged by the\n"
    "release's rules, as with the reference engine. A Python without torch or deepspeed: exit 3,\n"
    "nothing written. A worker that hangs is killed at --rank-timeout.\n"
    "--engine deepspeed==VERSION: that release, installed from PyPI on first use into\n"
    "$TRAINREPRO_CACHE/deepspeed-VERSION over the torch trainrepro was built with (your own "
    "Python\n"
    "is never touched); TRAINREPRO_OFFLINE (1, true or yes) never installs. A release PyPI does\n"
    "not have (or yanked): exit 2 naming the nearest ones; PyPI unreachable or a failed install:\n"
    "exit 3. The cache must be yours (0700 when created; another user's, or one others may\n"
    "write: exit 3), and a release's files are checked against its stamp before each use.\n"
    "--engine fsdp2: PyTorch's own FSDP2 (fully_shard over a CPU mesh, gloo) in the\n"
    "Python named by TRAINREPRO_FSDP2_PYTHON, else the one whose torch built trainrepro; the\n"
    "ds_config mapped as docs/engines.md's table says (\"FSDP2 as the engine under test\"). What FSDP2\n"
    "has no counterpart for (DeepSpeed's config errors, fp16 loss scaling, Lamb, the Trainer's\n"
    "DeepSpeed loop, NVMe offload, TorchScript models) or not yet (CUDA) is skipped with the\n"
    "reason; offload to the CPU is CPUOffloadPolicy.\n";

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

  NewScenarioArgs new_args;
  CLI::App* new_scenario = app.add_subcommand(
      "new",
      "Write a scenario from your own DeepSpeed config (kept verbatim), your model and "
      "samples, your loop's habits and the batch you intend; then its golden");
  new_scenario->add_option("--ds-config", new_args.ds_config, "your ds_config.json")->required();
  new_scenario->add_option("-o,--out", new_args.output, "the scenario file to write")->required();
  new_scenario->add_option("--model", new_args.model_file,
                           "your model as a TorchScript file (torch.jit.save); default the "
                           "built-in MLP, or the built-in model that fits --data");
  new_scenario->add_option("--data", new_args.data_file,
                           "your samples as a safetensors file (inputs, targets, optional "
                           "attention_mask); default generated data");
  new_scenario->add_option("--world-size", new_args.world_size, "data-parallel ranks (default 1)")
      ->check(CLI::Range(int64_t{1}, kLargestWorldSize));
  new_scenario
      ->add_option("--intended-batch", new_args.intended_batch,
                   "the train batch size you mean to train with (default: the one "
                   "DeepSpeed resolves from the config)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  new_scenario->add_option("--steps", new_args.steps, "optimizer steps compared (default 4)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  new_scenario->add_option("--hf-trainer", new_args.hf_trainer,
                           "a JSON file of your TrainingArguments (fills the config's \"auto\")");
  new_scenario->add_option("--habit", new_args.habits,
                           "a loop habit KEY=VALUE (docs/scenarios.md, \"loop\"), e.g. "
                           "keep=loss_with_graph; repeatable");
  new_scenario->add_option("--client-optimizer", new_args.client_optimizer,
                           "the optimizer your script passes to deepspeed.initialize (a config "
                           "without \"optimizer\"): 'AdamW lr=3e-4 weight_decay=0.1 "
                           "betas=0.9,0.95' (AdamW, Adam or SGD with torch's parameter names), or "
                           "a .json file holding the client_optimizer section");
  new_scenario->add_option("--param-groups", new_args.param_groups,
                           "the param groups your script passes: 'no_decay=bias,LayerNorm.weight' "
                           "(names containing one of these get weight_decay 0, the rest the "
                           "optimizer's), or a .json file holding the parameter_groups array");
  new_scenario->add_option("--deepspeed-version", new_args.deepspeed_version,
                           "the DeepSpeed release whose semantics apply (default 0.19.8)");
  new_scenario->add_option("--name", new_args.name, "the scenario's name (default: from -o)");
  new_scenario->add_option("--golden-dir", new_args.golden_dir,
                           "where its golden goes (default golden)");
  bool no_golden = false;
  new_scenario->add_flag("--no-golden", no_golden, "write the scenario only");
  new_scenario->add_flag("--force", new_args.force, "replace an existing scenario file");
  new_scenario->footer(
      "Exit codes:\n"
      "  0  scenario (and golden) written\n"
      "  2  the config, a file or an option cannot make a scenario (nothing written)\n"
      "  3  the scenario or golden could not be written\n");

  ExportArgs export_args;
  CLI::App* export_scenario = app.add_subcommand(
      "export",
      "Write a self-contained Python program that reproduces a scenario with PyTorch "
      "and the real DeepSpeed, for an upstream issue");
  export_scenario->add_option("SCENARIO", export_args.scenario_file, "the scenario file")
      ->required();
  bool as_python = false;
  export_scenario->add_flag("--python", as_python, "a Python program (the only format)")
      ->required();
  export_scenario->add_option("-o,--out", export_args.output, "the program to write")->required();
  export_scenario->add_flag("--force", export_args.force, "replace an existing file");
  export_scenario->footer(
      "Exit codes:\n"
      "  0  written\n"
      "  2  a bad scenario, or one the script cannot reproduce (said with its key)\n"
      "  3  the program could not be written\n");

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
                  "seconds a multi-rank scenario may take before its ranks are killed, and an "
                  "--engine's Python to answer what it has (600)")
      ->check(CLI::PositiveNumber);
  run->add_flag("--allow-large", run_args.allow_large,
                "run scenarios that need more memory, processes or time than this machine "
                "gives (refused with exit 2 otherwise)");
  run->add_option("--junit", run_args.junit_file,
                  "write the run as JUnit XML (one testsuite per scenario folder) to FILE");
  run->add_option("--engine", run_args.engine,
                  "what trains each scenario: reference (the C++ engine, the default), "
                  "deepspeed (the real DeepSpeed in the Python named by "
                  "TRAINREPRO_DEEPSPEED_PYTHON, else python3 on the PATH) or "
                  "deepspeed==VERSION (that release, installed into trainrepro's cache) or "
                  "fsdp2 (PyTorch's FSDP2 in the Python named by TRAINREPRO_FSDP2_PYTHON, else "
                  "the one whose torch built trainrepro)");
  run->footer(std::string(kExitCodes) + kDeepSpeedEngineNote);

  BisectArgs bisect_args;
  CLI::App* bisect = app.add_subcommand(
      "bisect",
      "Find the first DeepSpeed release whose outcome on a scenario differs from a good "
      "release's");
  bisect->add_option("SCENARIO", bisect_args.scenario_file, "one scenario file")->required();
  bisect->add_option("--engine", bisect_args.engine, "deepspeed (the releases come from PyPI)")
      ->required();
  bisect->add_option("--good", bisect_args.good, "a release whose outcome is the good one")
      ->required();
  bisect
      ->add_option("--bad", bisect_args.bad,
                   "a release whose outcome differs (older than --good: find the fix)")
      ->required();
  bisect->add_option("--golden-dir", bisect_args.golden_dir,
                     "where goldens are read (default golden)");
  bisect
      ->add_option("--rank-timeout", bisect_args.rank_timeout_seconds,
                   "seconds one probe may train before it is killed, and its release's Python "
                   "to answer what it has (600)")
      ->check(CLI::PositiveNumber);
  bisect->footer(
      "Every release from --good to --bad that PyPI publishes (yanked ones left out) is a\n"
      "candidate; each probe installs its release into $TRAINREPRO_CACHE/deepspeed-RELEASE once\n"
      "(as run --engine deepspeed==RELEASE) and runs the scenario on it. The good and bad "
      "releases\n"
      "run first, then binary search: about log2(releases) + 2 probes. Each probe's verdict is\n"
      "printed, then `first bad: R (outcome: what was found); last good: R'`. A --good newer\n"
      "than --bad searches for the fix instead: `fixed in: R; last bad: R' (outcome: ...)`.\n"
      "It assumes the outcome changed once between them.\n"
      "Exit codes:\n"
      "  0  the first bad release (or the fix) was found\n"
      "  1  the good and bad releases give the same outcome (nothing to search)\n"
      "  2  bad usage: a release PyPI does not have or yanked, --good equal to --bad, a bad\n"
      "     scenario\n"
      "  3  infrastructure: PyPI unreachable, an install failed, a probe ended in an error\n");

  WatchArgs watch_args;
  CLI::App* watch = app.add_subcommand(
      "watch",
      "Run your own DeepSpeed training command unchanged and judge its first optimizer steps "
      "against a float64 golden taken from its own micro-batches");
  watch->add_option("COMMAND", watch_args.command,
                    "the command, after --: torchrun --nproc_per_node 2 train.py ARGS, "
                    "deepspeed train.py ARGS, python -m torch.distributed.run ...");
  watch->add_option("--steps", watch_args.steps, "optimizer steps judged (4)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  watch->add_option("--memory-steps", watch_args.memory_steps,
                    "optimizer steps at whose boundaries memory is sampled and judged for leaks "
                    "(40; 0: none; at least 13 to judge: 5 warm-up and a window of 8)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  watch->add_option("--intended-batch", watch_args.intended_batch,
                    "the batch (samples per optimizer step, all ranks) you mean to train with; "
                    "default: what DeepSpeed resolved from your config")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  watch->add_option("--results", watch_args.results_file,
                    "write the verdict as JSON to FILE (atomically)");
  watch->add_option("--junit", watch_args.junit_file,
                    "write the verdict as JUnit XML to FILE (atomically), one test case");
  watch->add_option("--html", watch_args.html_file,
                    "write the verdict as one self-contained HTML page to FILE (atomically)");
  watch->add_option("--loss", watch_args.loss,
                    "the golden's loss: auto (the loop's own: cross entropy over every counted "
                    "target, MSE over every element), tokens (cross entropy over every counted "
                    "token of the whole batch), samples (each sample's mean, then the mean over "
                    "samples), mse, model (the loss the model computes in its own forward from "
                    "labels, over the whole batch)")
      ->check(CLI::IsMember({"auto", "tokens", "samples", "mse", "model"}));
  watch->add_option("--golden", watch_args.golden,
                    "the golden's precision: own (default: each micro-batch's forward and "
                    "backward computed again at the step's start weights in the run's own dtype "
                    "and kernels, summed in float64; one parameter's whole gradient at a time), "
                    "float64 (the same in float64, with a self-check against the loop's "
                    "losses; about 3x the model's memory: for small models)")
      ->check(CLI::IsMember({"own", "float64"}));
  watch->add_option("--coordinates", watch_args.coordinates,
                    "gradient coordinates judged per step, the same on every rank: every tensor "
                    "at least 64, the rest in proportion to size (default 262144; 0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  watch->add_option("--save-scenario", watch_args.save_scenario,
                    "write the watched run as a scenario FILE (config, model, samples beside it; "
                    "its golden computed), the diagnosis as its expectation");
  watch->add_option("--golden-dir", watch_args.golden_dir,
                    "where --save-scenario's golden is written (default golden)");
  watch->add_option("--timeout", watch_args.timeout_seconds,
                    "seconds the command may run before it is killed with its processes (3600)")
      ->check(CLI::PositiveNumber);
  watch->footer(
      "The command runs with a private folder first on PYTHONPATH whose sitecustomize wraps\n"
      "deepspeed.initialize: nothing is installed, nothing of yours is written. Its output is\n"
      "printed when it ends, then the verdict. See docs/watch.md.\n"
      "Exit codes:\n"
      "  0  passed: every judged step's gradients match the golden, the batch is the intended one\n"
      "  1  failed: a diagnosis (or gradients no known mistake explains)\n"
      "  2  bad usage: no command, a command that cannot be started\n"
      "  3  not judged: no DeepSpeed engine was created, the command failed or timed out before a\n"
      "     step was judged, the golden could not be computed (the reason is printed)\n");

  ReportArgs report_args;
  CLI::App* report = app.add_subcommand(
      "report",
      "Write one self-contained HTML page (summary, scenario table, curves) from results files");
  report
      ->add_option("RESULTS", report_args.paths,
                   "results folders (searched for *.json) or files, from `run --results`")
      ->required();
  report->add_option("-o,--output", report_args.output,
                     "the page to write (default reports/out/report.html)");
  report->add_option("--perf-history", report_args.perf_history,
                     "also draw this machine's performance history (reports/history/<machine>, "
                     "from `perf run --out`): every judged figure over the runs, change points "
                     "marked");
  report->footer(
      "Exit codes:\n"
      "  0  the page was written from every file given\n"
      "  2  no results found, or some files were not results files (named on stderr; the page\n"
      "     is written from the others and lists them); a --perf-history folder without a\n"
      "     readable perf run\n"
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

  CLI::App* perf = app.add_subcommand(
      "perf",
      "Performance regression tracking: measure, compare with a statistical verdict, "
      "draw the history");
  perf->require_subcommand(1);
  PerfRunArgs perf_run_args;
  std::string perf_device;
  CLI::App* perf_run = perf->add_subcommand(
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

  PerfCompareArgs compare_args;
  CLI::App* perf_compare = perf->add_subcommand(
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
  bool no_confirm = false;
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

  PerfHistoryArgs history_args;
  CLI::App* perf_history = perf->add_subcommand(
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

  RankRunArgs rank_args;
  std::string rank_device;
  CLI::App* rank_run = app.add_subcommand(
      "rank-run", "One rank of a multi-rank scenario, as started by mpirun or srun (internal)");
  rank_run->add_option("SCENARIO", rank_args.scenario_file)->required();
  rank_run->add_option("--result-file", rank_args.result_file)->required();
  rank_run->add_option("--golden-dir", rank_args.golden_dir);
  rank_run->add_option("--device", rank_device)->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  rank_run->group("");  // hidden from --help

  RankMeasureArgs rank_measure_args;
  std::string rank_measure_device = "cpu";
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
    if (export_scenario->parsed()) return run_export(export_args);
    if (new_scenario->parsed()) {
      new_args.write_golden = !no_golden;
      return run_new_scenario(new_args);
    }
    if (report->parsed()) return run_report(report_args);
    if (perf_run->parsed()) {
      perf_run_args.provenance = current_run_provenance(argc, argv);
      perf_run_args.device = device_choice_from(perf_device);
      return run_perf_run(perf_run_args);
    }
    if (perf_compare->parsed()) {
      compare_args.confirm = !no_confirm;
      return run_perf_compare(compare_args);
    }
    if (perf_history->parsed()) return run_perf_history(history_args);
    if (rank_measure->parsed()) {
      rank_measure_args.device = rank_measure_device == "cuda" ? Device::cuda : Device::cpu;
      return run_rank_measure(rank_measure_args);
    }
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
    if (bisect->parsed()) return run_bisect(bisect_args);
    if (watch->parsed()) return run_watch(watch_args);
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
