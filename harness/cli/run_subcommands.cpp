// `run`, `bisect`, `watch`, `report` and the internal `rank-run`: what trains and judges
// scenarios, releases or a watched command, and what reports them.
#include "harness/cli/subcommands.h"

#include <memory>
#include <string>

namespace {

constexpr const char* kDeepSpeedEngineNote =
    "\n--engine deepspeed: the same golden, judges and reports, with the real DeepSpeed training\n"
    "each scenario on the CPU (DS_ACCELERATOR=cpu unless set), one Python process per rank\n"
    "(gloo), fp32 and bf16. Skipped with the reason: CUDA, fp16 (DeepSpeed's loss scaling on a\n"
    "CPU is not a GPU's), Lamb (no CPU kernel), TorchScript models (DeepSpeed hooks the model's\n"
    "modules, which a ScriptModule refuses), the loop's own clip_grad_norm, memory figures the\n"
    "census cannot give (a peak budget, ZeRO-3 gathered parameters). Config errors are judged by "
    "the\n"
    "release's rules, as with the reference engine. A Python without torch or deepspeed: exit 3,\n"
    "nothing written. A worker that hangs is killed at --rank-timeout.\n"
    "--engine deepspeed==VERSION: that release, installed from PyPI on first use into\n"
    "$TRAINREPRO_CACHE/deepspeed-VERSION over the torch trainrepro was built with (your own "
    "Python\n"
    "is never touched); TRAINREPRO_OFFLINE (1, true or yes) never installs. A release PyPI does\n"
    "not have (or yanked): exit 2 naming the nearest ones; one known not to run over this torch\n"
    "(docs/releases.md): exit 2 with the reason, nothing installed; PyPI unreachable, a failed\n"
    "install or a release that does not import: exit 3 with the reason. Downloads are kept in\n"
    "~/.cache/trainrepro/pip-downloads for the next install. The cache must be yours (0700\n"
    "when created; another user's, or one others may write: exit 3), and a release's files are\n"
    "checked against its stamp before each use.\n"
    "--engine fsdp2: PyTorch's own FSDP2 (fully_shard over a CPU mesh, gloo) in the\n"
    "Python named by TRAINREPRO_FSDP2_PYTHON, else the one whose torch built trainrepro; the\n"
    "ds_config mapped as docs/engines.md's table says (\"FSDP2 as the engine under test\"). What "
    "FSDP2\n"
    "has no counterpart for (DeepSpeed's config errors, fp16 loss scaling, Lamb, the Trainer's\n"
    "DeepSpeed loop, NVMe offload, TorchScript models) or not yet (CUDA) is skipped with the\n"
    "reason; offload to the CPU is CPUOffloadPolicy.\n"
    "Worker sets (--engine deepspeed or fsdp2): one set of worker ranks per world size is kept\n"
    "for the whole run and handed scenario after scenario (Python, the imports and the process\n"
    "group paid once per set; each scenario's model, engine, seeds and folder its own). A set\n"
    "that times out (--rank-timeout), loses a rank or fails a scenario is ended and that\n"
    "scenario alone is an error; the next starts a new set. --fresh-workers starts new ranks\n"
    "for every scenario instead (what a user's own launch does; about 4x slower: scenarios/\n"
    "took 32.6 min with it and 7.6 min served, 2 cores, 2026-12-06).\n"
    "--serve-workers, the opt-in before serving was the default, is still accepted. Exit codes\n"
    "as above. docs/engines.md, \"Ranks that serve job after job\". The reference engine ignores\n"
    "both.\n";

}  // namespace

#include "harness/cli/commands.h"

namespace trainrepro {

Subcommand add_run(CLI::App& app, int argc, char** argv) {
  struct Parsed {
    RunArgs run_args;
    std::string device;
  };
  auto parsed = std::make_shared<Parsed>();
  RunArgs& run_args = parsed->run_args;
  std::string& device = parsed->device;
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
  CLI::Option* serve = run->add_flag(
      "--serve-workers", run_args.serve_workers,
      "--engine deepspeed or fsdp2: keep one set of worker ranks per world size for the whole "
      "run (the default; see below)");
  run->add_flag("--fresh-workers", run_args.fresh_workers,
                "--engine deepspeed or fsdp2: start new worker ranks for every scenario instead "
                "of serving them from one set per world size")
      ->excludes(serve);
  run->footer(std::string(kExitCodes) + kDeepSpeedEngineNote);
  return {run, [parsed, argc, argv] {
            parsed->run_args.provenance = current_run_provenance(argc, argv);
            parsed->run_args.device = device_choice_from(parsed->device);
            return run_scenarios(parsed->run_args);
          }};
}

Subcommand add_bisect(CLI::App& app) {
  struct Parsed {
    BisectArgs bisect_args;
  };
  auto parsed = std::make_shared<Parsed>();
  BisectArgs& bisect_args = parsed->bisect_args;
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
      "A release that cannot run (refused up front as unable to run over this torch, an install\n"
      "that fails, a release that does not import) is skipped with its reason, as git bisect\n"
      "skip does, and the search goes on around it; an end that cannot run gives way to the\n"
      "nearest release inside the range. When only skipped releases stand between the answer\n"
      "and the last good one: `first bad: R, or an earlier release that could not run: S`.\n"
      "Exit codes:\n"
      "  0  the first bad release (or the fix) was found\n"
      "  1  the good and bad releases give the same outcome (nothing to search)\n"
      "  2  bad usage: a release PyPI does not have or yanked, --good equal to --bad, a bad\n"
      "     scenario\n"
      "  3  infrastructure: PyPI unreachable, a cache that is not yours, or fewer than two\n"
      "     releases of the range could run\n");
  return {bisect, [parsed] { return run_bisect(parsed->bisect_args); }};
}

Subcommand add_watch(CLI::App& app, int argc, char** argv) {
  struct Parsed {
    WatchArgs watch_args;
  };
  auto parsed = std::make_shared<Parsed>();
  WatchArgs& watch_args = parsed->watch_args;
  CLI::App* watch = app.add_subcommand(
      "watch",
      "Run your own DeepSpeed training command unchanged and judge its first optimizer steps "
      "against a float64 golden taken from its own micro-batches");
  watch->add_option("COMMAND", watch_args.command,
                    "the command, after --: torchrun --nproc_per_node 2 train.py ARGS, "
                    "deepspeed train.py ARGS, python -m torch.distributed.run ...");
  watch->add_option("--steps", watch_args.steps, "optimizer steps judged (4)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  watch
      ->add_option("--memory-steps", watch_args.memory_steps,
                   "optimizer steps at whose boundaries memory is sampled and judged for leaks "
                   "(40; 0: none; at least 13 to judge: 5 warm-up and a window of 8)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  watch
      ->add_option("--intended-batch", watch_args.intended_batch,
                   "the batch (samples per optimizer step, all ranks) you mean to train with; "
                   "default: what DeepSpeed resolved from your config")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  watch->add_option("--results", watch_args.results_file,
                    "write the verdict as a results file to FILE (atomically; `trainrepro "
                    "report` reads it)");
  watch->add_option("--junit", watch_args.junit_file,
                    "write the verdict as JUnit XML to FILE (atomically), one test case, as "
                    "`run --junit` writes a scenario");
  watch->add_option("--html", watch_args.html_file,
                    "write the verdict as one self-contained HTML page to FILE (atomically)");
  watch
      ->add_option("--loss", watch_args.loss,
                   "the golden's loss: auto (the loop's own: cross entropy over every counted "
                   "target, MSE over every element), tokens (cross entropy over every counted "
                   "token of the whole batch), samples (each sample's mean, then the mean over "
                   "samples), mse, model (the loss the model computes in its own forward from "
                   "labels, over the whole batch)")
      ->check(CLI::IsMember({"auto", "tokens", "samples", "mse", "model"}));
  watch
      ->add_option("--golden", watch_args.golden,
                   "the golden's precision: own (default: each micro-batch's forward and "
                   "backward computed again at the step's start weights in the run's own dtype "
                   "and kernels, summed in float64; one parameter's whole gradient at a time), "
                   "float64 (the same in float64, with a self-check against the loop's "
                   "losses; about 3x the model's memory: for small models)")
      ->check(CLI::IsMember({"own", "float64"}));
  watch
      ->add_option("--coordinates", watch_args.coordinates,
                   "gradient coordinates judged per step, the same on every rank: every tensor "
                   "at least 64, the rest in proportion to size (default 262144; 0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  watch->add_option("--save-scenario", watch_args.save_scenario,
                    "write the watched run as a scenario FILE (config, model, samples beside it; "
                    "its golden computed), the diagnosis as its expectation");
  watch->add_option("--golden-dir", watch_args.golden_dir,
                    "where --save-scenario's golden is written (default golden)");
  watch
      ->add_option("--timeout", watch_args.timeout_seconds,
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
  return {watch, [parsed, argc, argv] {
            parsed->watch_args.provenance = current_run_provenance(argc, argv);
            return run_watch(parsed->watch_args);
          }};
}

Subcommand add_report(CLI::App& app) {
  struct Parsed {
    ReportArgs report_args;
  };
  auto parsed = std::make_shared<Parsed>();
  ReportArgs& report_args = parsed->report_args;
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
  return {report, [parsed] { return run_report(parsed->report_args); }};
}

Subcommand add_rank_run(CLI::App& app, int argc, char** argv) {
  struct Parsed {
    RankRunArgs rank_args;
    std::string rank_device;
  };
  auto parsed = std::make_shared<Parsed>();
  RankRunArgs& rank_args = parsed->rank_args;
  std::string& rank_device = parsed->rank_device;
  CLI::App* rank_run = app.add_subcommand(
      "rank-run", "One rank of a multi-rank scenario, as started by mpirun or srun (internal)");
  rank_run->add_option("SCENARIO", rank_args.scenario_file)->required();
  rank_run->add_option("--result-file", rank_args.result_file)->required();
  rank_run->add_option("--golden-dir", rank_args.golden_dir);
  rank_run->add_option("--device", rank_device)->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  rank_run->group("");  // hidden from --help
  return {rank_run, [parsed, argc, argv] {
            parsed->rank_args.provenance = current_run_provenance(argc, argv);
            parsed->rank_args.device = device_choice_from(parsed->rank_device);
            return run_rank(parsed->rank_args);
          }};
}

}  // namespace trainrepro
