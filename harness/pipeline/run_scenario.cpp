#include "harness/pipeline/run_scenario.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <c10/util/Exception.h>

#include "harness/distributed/communicator.h"
#include "harness/distributed/mpi_session.h"
#include "harness/distributed/rank_launcher.h"
#include "harness/distributed/rank_work_folder.h"
#include "harness/engine/runtime_info.h"
#include "harness/golden/golden_key.h"
#include "harness/golden/golden_run.h"
#include "harness/golden/golden_store.h"
#include "harness/json/scenario_error.h"
#include "harness/loop/training_loop.h"
#include "harness/memory/cuda_memory.h"
#include "harness/memory/host_memory.h"
#include "harness/pipeline/resource_check.h"
#include "harness/report/results_json.h"
#include "harness/scenario/load_scenario.h"
#include "harness/verdict/changed_default.h"
#include "harness/verdict/golden_staleness.h"
#include "harness/verdict/habit_visibility.h"
#include "harness/verdict/judge_config.h"
#include "harness/verdict/judge_training.h"
#include "harness/verdict/loss_scale_calibration.h"
#include "models/torchscript_model.h"

namespace trainrepro {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Verdict error_verdict(ErrorSource source, std::string found) {
  Verdict verdict;
  verdict.outcome = Outcome::error;
  verdict.error_source = source;
  verdict.found = std::move(found);
  return verdict;
}

Verdict skipped_verdict(std::string why) {
  Verdict verdict;
  verdict.outcome = Outcome::skipped;
  verdict.found = std::move(why);
  return verdict;
}

bool requires_(const Scenario& scenario, Requirement wanted) {
  for (Requirement requirement : scenario.requires_) {
    if (requirement == wanted) return true;
  }
  return false;
}

// Chooses the device, or explains why this machine cannot run the scenario: a scenario that
// asks for CUDA is skipped without a GPU, but `--device cuda` on such a machine is an error,
// because nightly GPU CI must not turn green when its GPU disappears.
std::variant<Device, Verdict> choose_device(const Scenario& scenario, const RunOptions& options) {
  const DeviceChoice choice = options.device_override.value_or(scenario.device);
  if (choice == DeviceChoice::cuda && !options.cuda_available) {
    if (options.device_override) {
      return error_verdict(ErrorSource::infrastructure,
                           "--device cuda was given but LibTorch finds no usable CUDA GPU");
    }
    return skipped_verdict("skipped: the scenario runs on CUDA and this machine has no usable GPU");
  }
  // Under an outside launcher every process runs the same scenarios: only those of its world
  // size can join up; the others are skipped on every rank alike, saying why.
  if (launched_by_mpi() && scenario.world_size != options.launcher_world_size) {
    return skipped_verdict("skipped: the scenario runs on " + std::to_string(scenario.world_size) +
                           " rank(s) and this launch (mpirun or srun) started " +
                           std::to_string(options.launcher_world_size));
  }
  // An engine that starts its own ranks (the Python workers: torch's gloo) needs no Open MPI.
  if ((requires_(scenario, Requirement::mpi) || scenario.world_size > 1) && !mpi_available() &&
      !options.engine->starts_own_ranks()) {
    return skipped_verdict(
        "skipped: the scenario runs on several ranks and mpirun is not on the PATH");
  }
  if (requires_(scenario, Requirement::cuda) && !options.cuda_available) {
    return skipped_verdict(
        "skipped: the scenario requires CUDA and this machine has no usable GPU");
  }
  bool use_cuda = choice == DeviceChoice::cuda ||
                  (choice == DeviceChoice::auto_detect && options.cuda_available);
  // One rank per GPU. When trainrepro launches the ranks itself they share this machine's GPUs;
  // under an outer launcher (several machines) the launcher knows better.
  const bool too_few_gpus = !launched_by_mpi() && scenario.world_size > options.cuda_devices;
  if (use_cuda && too_few_gpus) {
    if (choice == DeviceChoice::auto_detect) {
      use_cuda = false;  // "auto" falls back to the CPU rather than share a GPU between ranks
    } else {
      return skipped_verdict("skipped: the scenario runs " + std::to_string(scenario.world_size) +
                             " ranks on CUDA, one per GPU, and this machine has " +
                             std::to_string(options.cuda_devices));
    }
  }
  return use_cuda ? Device::cuda : Device::cpu;
}

// The CUDA snapshots rank 0 wrote beside its result (`<result>.snapshot-<step>`).
std::vector<MemorySnapshot> take_rank_zero_snapshots(const std::string& result_path) {
  std::vector<MemorySnapshot> snapshots;
  const std::filesystem::path result(result_path);
  const std::string prefix = result.filename().string() + ".snapshot-";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(result.parent_path(), error)) {
    const std::string name = entry.path().filename().string();
    const std::string step = name.substr(std::min(name.size(), prefix.size()));
    if (name.rfind(prefix, 0) != 0 || step.empty() ||
        step.find_first_not_of("0123456789") != std::string::npos || step.size() > 12) {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    snapshots.push_back({std::stoll(step), bytes.str()});
  }
  return snapshots;
}

// The parent's side of a multi-rank run: mpirun starts the ranks (`trainrepro rank-run`), rank 0
// writes the results file, and this process reports what it says.
void run_on_ranks(const Scenario& scenario, const Plan& plan, const RunOptions& options,
                  ScenarioResult& result) {
  // A private folder (mode 0700, a fresh name) for everything the ranks make, removed after.
  std::string folder;
  try {
    folder = create_rank_work_folder();
  } catch (const std::runtime_error& error) {
    result.verdict =
        error_verdict(ErrorSource::infrastructure, scenario.file + ": " + error.what());
    return;
  }
  const std::string result_path = folder + "/result.json";
  RankLaunch launch;
  try {
    launch = launch_ranks(static_cast<int>(plan.batch.world_size),
                          {"rank-run", scenario.file, "--result-file", result_path, "--golden-dir",
                           options.golden_dir, "--device", device_name(plan.device)},
                          options.rank_timeout_seconds, folder);
  } catch (const std::runtime_error&) {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
    throw;
  }
  std::ifstream in(result_path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<MemorySnapshot> snapshots = take_rank_zero_snapshots(result_path);
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  // Stopped from outside (timeout, Ctrl-C): the ranks are dead and their files gone; end as
  // the signal would have ended an unattended process.
  if (launch.stopped_by_signal != 0) end_by_signal(launch.stopped_by_signal);
  const nlohmann::json written = nlohmann::json::parse(text.str(), nullptr, false);

  const std::string ranks = std::to_string(plan.batch.world_size) + " ranks";
  if (launch.timed_out) {
    result.verdict = error_verdict(
        ErrorSource::infrastructure,
        scenario.file + ": " + ranks + " did not finish within " +
            std::to_string(options.rank_timeout_seconds) +
            " s (a rank hangs or died mid-collective); all were killed. Their output:\n" +
            launch.output);
    return;
  }
  if (written.is_discarded() || !written.is_object()) {
    result.verdict = error_verdict(
        ErrorSource::infrastructure,
        scenario.file + ": " + ranks + " ended (mpirun exit code " +
            std::to_string(launch.exit_code) +
            ") before rank 0 wrote a result; a rank failed. Their output:\n" + launch.output);
    return;
  }
  // Rank 0 judged the whole run; its result is this scenario's result, timings included.
  try {
    result = result_from_json(written, scenario.file + " (rank 0's result)");
    result.memory_snapshots = std::move(snapshots);
  } catch (const ResultsFormatError& error) {
    result.verdict =
        error_verdict(ErrorSource::infrastructure,
                      std::string(error.what()) + "; the rank was built from another trainrepro?");
  }
}

// Golden, training and judging; every failure becomes a result.
void run_training_stage(const Scenario& scenario, const Plan& resolved, const RunOptions& options,
                        ScenarioResult& result) {
  const TrainingEngine& engine = *options.engine;
  if (auto refused = engine.refusal(scenario, resolved)) {
    result.verdict = std::move(*refused);
    return;
  }
  const Plan plan = engine.plan_trained(scenario, resolved, result.warnings);
  result.plan = plan;
  if (!options.allow_large) {
    const MachineCapacity machine{
        physical_ram_bytes(), plan.device == Device::cuda ? cuda_device_capacity_bytes() : 0,
        std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()))};
    if (auto refusal = refuse_beyond_machine(scenario, plan, machine)) {
      result.verdict = error_verdict(ErrorSource::scenario, *refusal);
      return;
    }
  }
  // An engine that starts its own ranks (one Python process each, gloo) is never launched.
  if (plan.batch.world_size > 1 && !launched_by_mpi() && !engine.starts_own_ranks()) {
    run_on_ranks(scenario, plan, options, result);
    return;
  }
  std::unique_ptr<Communicator> communicator;
  if (plan.batch.world_size > 1 && !engine.starts_own_ranks()) {
    try {
      communicator =
          plan.device == Device::cuda ? make_nccl_communicator() : make_mpi_communicator();
    } catch (const std::exception& error) {
      result.verdict = error_verdict(ErrorSource::infrastructure,
                                     scenario.file + ": cannot join the ranks: " + error.what());
      return;
    }
    if (communicator->world_size() != plan.batch.world_size) {
      result.verdict = error_verdict(
          ErrorSource::scenario,
          scenario.file + ":/world_size: " + std::to_string(plan.batch.world_size) +
              " ranks, but the launcher started " + std::to_string(communicator->world_size()));
      return;
    }
  }

  auto stage_start = Clock::now();
  Golden golden;
  try {
    golden = load_golden(options.golden_dir, scenario);
  } catch (const GoldenError& error) {
    result.verdict = error_verdict(ErrorSource::scenario, error.what());
    return;
  }
  result.golden_seconds = seconds_since(stage_start);

  stage_start = Clock::now();
  Trace trace;
  try {
    auto trained =
        engine.train(scenario, plan, golden,
                     {options.rank_timeout_seconds, communicator.get(), options.worker_sets});
    if (auto* verdict = std::get_if<Verdict>(&trained)) {
      result.verdict = std::move(*verdict);
      return;
    }
    trace = std::move(std::get<Trace>(trained));
  } catch (const UserModelError& error) {
    result.verdict = error_verdict(ErrorSource::scenario,
                                   scenario.file + ":/model/options/file: " + error.what());
    return;
  } catch (const c10::Error& error) {
    // LibTorch's message without its C++ frame dump: the frames say nothing to a user.
    result.verdict =
        error_verdict(ErrorSource::infrastructure,
                      scenario.file + ": training failed: " + error.what_without_backtrace());
    return;
  } catch (const std::exception& error) {
    result.verdict = error_verdict(ErrorSource::infrastructure,
                                   scenario.file + ": training failed: " + error.what());
    return;
  }
  if (auto stale = find_stale_golden(scenario, trace, golden)) {
    result.verdict = error_verdict(ErrorSource::scenario, *stale);
    return;
  }
  // Only rank 0 judges: its result is the scenario's (rank_run_command.cpp), so the other
  // ranks neither train the precision twin nor judge.
  if (communicator && communicator->rank() != 0) {
    result.training_seconds = seconds_since(stage_start);
    return;
  }
  // A run that skipped windows (fp16 loss-scale calibration, or a failure the judge names) is
  // compared with a golden that skipped the same ones: the data of a skipped window is never
  // applied, in DeepSpeed as in the golden. Computed from the same inputs as the stored golden,
  // which the run's initial weights and samples were just checked against.
  const std::vector<bool> run_skips = skip_mask(trace);
  if (std::find(run_skips.begin(), run_skips.end(), true) != run_skips.end()) {
    try {
      Golden following = compute_golden_following_skips(scenario, run_skips);
      following.file = golden.file;
      golden = std::move(following);
    } catch (const std::exception& error) {
      result.verdict = error_verdict(ErrorSource::infrastructure,
                                     scenario.file +
                                         ": the golden that skips the run's skipped "
                                         "windows failed: " +
                                         error.what());
      return;
    }
  }
  // fp16/bf16: the same steps without accumulation, in the same precision, on one rank: the
  // error a correct run of this precision has against the float64 golden. It skips the windows
  // the run skipped and rounds at the run's loss scales.
  std::optional<Trace> precision_twin;
  if (plan.precision != Precision::fp32) {
    try {
      LoopOptions twin_options;
      twin_options.recorded_steps = scenario.golden.steps;
      twin_options.skips_to_follow = run_skips;
      if (plan.precision == Precision::fp16) {
        for (const OptimizerStepRecord& step : trace.steps) {
          twin_options.loss_scales_to_follow.push_back(step.loss_scale);
        }
      }
      precision_twin = run_training_loop(scenario.model, scenario.data, golden_loop(scenario),
                                         precision_twin_plan(scenario, plan), twin_options);
    } catch (const std::exception& error) {
      result.verdict =
          error_verdict(ErrorSource::infrastructure,
                        scenario.file + ": the precision twin failed: " + error.what());
      return;
    }
  }
  result.training_seconds = seconds_since(stage_start);

  stage_start = Clock::now();
  TrainingJudgement training;
  MemoryJudgement memory;
  ZeroJudgement zero;
  result.verdict = judge_run(scenario, plan, trace, golden, training, memory, zero,
                             precision_twin ? &*precision_twin : nullptr);
  result.training = std::move(training);
  result.memory = std::move(memory);
  if (zero.judged) result.zero = std::move(zero);
  result.memory_samples = std::move(trace.memory);
  result.memory_snapshots = std::move(trace.memory_snapshots);
  result.judging_seconds = seconds_since(stage_start);
}

}  // namespace

LoadAttempt try_load_scenario(const std::string& file) {
  const auto start = Clock::now();
  LoadAttempt attempt;
  attempt.failure.file = file;
  attempt.failure.torch_version = torch_version();
  try {
    attempt.scenario = load_scenario(file);
  } catch (const ScenarioError& error) {
    attempt.failure.verdict = error_verdict(ErrorSource::scenario, error.what());
  } catch (const std::exception& error) {
    // A bug of ours, not the user's: report it as such rather than blame the scenario.
    attempt.failure.verdict = error_verdict(
        ErrorSource::infrastructure, file + ": internal error while loading: " + error.what());
  }
  attempt.failure.seconds = seconds_since(start);
  return attempt;
}

namespace {

// Trained by a DeepSpeed release other than the one whose rules judged: when the verdict is not
// the expected one, a default that differs between the two belongs in the diagnosis.
void add_changed_default(const Scenario& scenario, const RunOptions& options,
                         ScenarioResult& result) {
  const std::string release = options.engine->deepspeed_release();
  if (release.empty()) return;
  Verdict& verdict = result.verdict;
  if (verdict.outcome != Outcome::failed && verdict.outcome != Outcome::not_reproduced) return;
  if (!result.training) return;
  const auto finding = changed_default_finding(scenario.deepspeed, release, *result.training);
  if (!finding) return;
  // First: a default that changed explains the rest of the diagnosis (an update that differs).
  verdict.diagnosis = *finding + (verdict.diagnosis.empty() ? "" : " " + verdict.diagnosis);
}

}  // namespace

ScenarioResult run_loaded_scenario(const Scenario& written, const RunOptions& options) {
  const auto start = Clock::now();
  // A DeepSpeed implementation bug on the real DeepSpeed: the installed release chooses what
  // the run should show, here, before any judge reads the expectation.
  const TrainingEngine& engine = *options.engine;
  std::optional<ReleaseExpectation> on_release;
  std::optional<Scenario> as_expected_on_release;
  if (!engine.deepspeed_release().empty() && written.deepspeed_releases) {
    on_release = expectation_on_release(*written.deepspeed_releases, written.expect,
                                        engine.deepspeed_release());
    as_expected_on_release = written;
    as_expected_on_release->expect = on_release->expect;
  }
  const Scenario& scenario = as_expected_on_release ? *as_expected_on_release : written;
  ScenarioResult result;
  result.file = scenario.file;
  result.name = scenario.name;
  result.description = scenario.description;
  result.tags = scenario.tags;
  result.reference = scenario.reference;
  result.warnings = scenario.deepspeed.warnings;
  result.torch_version = torch_version();
  result.deepspeed_version = scenario.deepspeed.release->version;
  result.engine = engine.description();
  if (on_release) {
    result.release_expectation = on_release->said;
    if (!on_release->listed) result.warnings.push_back(scenario.file + ": " + on_release->said);
  }

  if (auto refused = engine.refusal_before_run(scenario)) {
    result.verdict = error_verdict(ErrorSource::scenario, *refused);
    result.verdict.expected = describe_expectation(scenario.expect);
    result.seconds = seconds_since(start);
    return result;
  }
  if (scenario.measure_only) {
    result.verdict = skipped_verdict(
        "skipped: a performance workload that is only measured "
        "(`trainrepro perf run`): it has no golden to judge against");
    result.seconds = seconds_since(start);
    return result;
  }
  auto device = choose_device(scenario, options);
  if (auto* verdict = std::get_if<Verdict>(&device)) {
    result.verdict = *verdict;
    result.verdict.expected = describe_expectation(scenario.expect);
    result.seconds = seconds_since(start);
    return result;
  }

  const PlanResolution resolution = resolve_plan(scenario, std::get<Device>(device));
  if (const auto* plan = std::get_if<Plan>(&resolution)) {
    result.plan = *plan;
    for (std::string& warning : habits_beyond_compared_steps(scenario)) {
      result.warnings.push_back(std::move(warning));
    }
  }

  if (auto verdict = judge_config(scenario, resolution)) {
    result.verdict = *verdict;
    if (auto why = engine.skips_config_verdict(scenario, resolution)) {
      result.verdict = skipped_verdict(*why);
    }
  } else {
    run_training_stage(scenario, std::get<Plan>(resolution), options, result);
    result.verdict.expected = describe_expectation(scenario.expect);
    add_changed_default(scenario, options, result);
    if (auto explained = engine.explain_verdict(scenario, result.verdict)) {
      result.verdict.diagnosis = *explained;
    }
  }
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace trainrepro
