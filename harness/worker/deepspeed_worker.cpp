#include "harness/worker/deepspeed_worker.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "harness/distributed/rank_launcher.h"
#include "harness/distributed/rank_work_folder.h"
#include "harness/files/atomic_write.h"
#include "harness/files/install_locations.h"
#include "harness/json/printable.h"
#include "harness/scenario/settings_acting_outside_the_run.h"
#include "harness/worker/private_folder.h"
#include "harness/worker/probe_answer.h"
#include "harness/worker/shared_memory_buffers.h"
#include "harness/worker/worker_sets.h"
#include "harness/worker/worker_sources.h"

namespace trainrepro {
namespace {

constexpr const char* kWorkerMain = "deepspeed_engine_worker.py";
// The probe's answer is a few hundred bytes; anything longer is not its answer.
constexpr std::streamsize kProbeAnswerLimit = 64 << 10;

std::optional<std::string> read_probe_answer_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(static_cast<size_t>(kProbeAnswerLimit), '\0');
  in.read(text.data(), kProbeAnswerLimit);
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// The command of a worker Python the user named (or python3, or torch's): one OpenMP thread per
// rank process unless OMP_NUM_THREADS says otherwise, as a managed release gets (each rank uses
// one LibTorch thread). Unset, `import torch` starts an OpenMP thread, and a serving set's
// coordinator with a second thread cannot fork its ranks (serving.py, why_fork_is_unsafe).
std::vector<std::string> with_one_openmp_thread(const std::string& program) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return {program};
  return {"env", "OMP_NUM_THREADS=1", program};
}

}  // namespace

std::string deepspeed_python_program() {
  const char* given = std::getenv("TRAINREPRO_DEEPSPEED_PYTHON");
  return given != nullptr && *given != '\0' ? given : "python3";
}

DeepSpeedPython find_deepspeed_python(int probe_timeout_seconds) {
  const char* given = std::getenv("TRAINREPRO_DEEPSPEED_PYTHON");
  const std::string program = deepspeed_python_program();
  return probe_deepspeed_python(
      with_one_openmp_thread(program),
      program + (given != nullptr && *given != '\0'
                     ? " (TRAINREPRO_DEEPSPEED_PYTHON)"
                     : " (python3 on the PATH; set TRAINREPRO_DEEPSPEED_PYTHON to "
                       "choose another)"),
      probe_timeout_seconds);
}

std::vector<std::string> with_private_caches(std::vector<std::string> arguments,
                                             const std::string& private_folder) {
  arguments.insert(arguments.begin(),
                   {"env", "TORCHINDUCTOR_CACHE_DIR=" + private_folder + "/torchinductor"});
  return arguments;
}

DeepSpeedPython find_fsdp2_python(int probe_timeout_seconds) {
  const char* given = std::getenv("TRAINREPRO_FSDP2_PYTHON");
  const bool chosen = given != nullptr && *given != '\0';
  const std::string program = chosen ? given : torch_python_executable();
  return probe_worker_python(with_one_openmp_thread(program),
                             program + (chosen ? " (TRAINREPRO_FSDP2_PYTHON)"
                                               : " (the Python whose torch built "
                                                 "trainrepro; set "
                                                 "TRAINREPRO_FSDP2_PYTHON to choose "
                                                 "another)"),
                             "fsdp2", probe_timeout_seconds);
}

DeepSpeedPython probe_deepspeed_python(std::vector<std::string> command, const std::string& named,
                                       int probe_timeout_seconds) {
  return probe_worker_python(std::move(command), named, "deepspeed", probe_timeout_seconds);
}

DeepSpeedPython probe_worker_python(std::vector<std::string> command, const std::string& named,
                                    const std::string& engine, int probe_timeout_seconds) {
  ::setenv("DS_ACCELERATOR", "cpu", /*overwrite=*/0);  // the worker trains on the CPU
  const std::string option = "--engine " + engine;
  DeepSpeedPython python;
  python.command = std::move(command);
  python.named = named;
  PrivateFolder folder;
  RankLaunch launch;
  std::vector<std::string> arguments = with_private_caches(python.command, folder.path());
  const std::string answer_path = folder.path() + "/probe-answer.json";
  arguments.insert(arguments.end(), {"-c", kProbeProgram, engine, answer_path});
  try {
    launch =
        launch_process_group(arguments, probe_timeout_seconds, folder.path() + "/probe-output.txt");
  } catch (const std::runtime_error& error) {
    throw DeepSpeedPythonError(option + ": cannot run " + named + ": " + error.what());
  }
  end_if_stopped(launch, folder);
  python.versions = read_probe_answer(read_probe_answer_file(answer_path), launch, option, named,
                                      engine, probe_timeout_seconds);
  return python;
}

void write_worker_sources(const std::string& folder) {
  for (const EmbeddedFile& source : worker_source_table()) {
    write_file_atomically(
        std::filesystem::path(folder) / source.name,
        std::string_view(reinterpret_cast<const char*>(source.bytes), source.size));
  }
}

std::string worker_title(const DeepSpeedPython& python) {
  return python.versions.engine == "fsdp2" ? "FSDP2" : "DeepSpeed";
}

WorkerTrace run_deepspeed_worker(const DeepSpeedPython& python, nlohmann::json job,
                                 int timeout_seconds,
                                 const std::vector<std::string>& parameter_names,
                                 const std::vector<at::Tensor>& initial_parameters,
                                 WorkerSets* served, const std::string& served_as) {
  // Every entry point refuses such a config first (refuse_settings_acting_outside_the_run, exit
  // 2); one that reaches this point is a bug of ours, and DeepSpeed must not see it either.
  if (python.versions.engine != "fsdp2") {
    const auto outside =
        settings_acting_outside_the_run(job.value("deepspeed", nlohmann::json::object()));
    if (!outside.empty()) {
      throw std::logic_error(
          "internal error: a config that makes DeepSpeed act outside the run "
          "reached the worker unchecked (/deepspeed" +
          outside.front().pointer + ")");
    }
  }
  if (served != nullptr) {
    return served->train(python, std::move(job), timeout_seconds, parameter_names,
                         initial_parameters, served_as);
  }
  PrivateFolder folder;
  write_worker_sources(folder.path());
  const std::string prefix = folder.path() + "/trace";
  job["trace"] = prefix;
  const std::string job_path = folder.path() + "/job.json";
  write_file_atomically(job_path, job.dump());
  std::vector<std::string> arguments = with_private_caches(python.command, folder.path());
  arguments.insert(arguments.end(), {folder.path() + "/" + kWorkerMain, job_path});
  const RankLaunch launch =
      launch_process_group(arguments, timeout_seconds, folder.path() + "/worker-output.txt");
  remove_shared_memory_buffers(prefix + ".port");
  end_if_stopped(launch, folder);
  if (launch.timed_out) {
    throw WorkerTraceError("the " + worker_title(python) + " worker did not finish within " +
                           std::to_string(timeout_seconds) +
                           " s (--rank-timeout) and was "
                           "killed; its output:\n" +
                           printable_output_tail(launch.output));
  }
  try {
    return read_worker_trace(prefix, parameter_names, initial_parameters,
                             /*expect_memory=*/job.value("memory", false));
  } catch (const WorkerTraceError& error) {
    throw WorkerTraceError(std::string(error.what()) + " (worker exit code " +
                           std::to_string(launch.exit_code) + "); its output:\n" +
                           printable_output_tail(launch.output));
  }
}

}  // namespace trainrepro
