#include "harness/worker/worker_set.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "harness/files/atomic_write.h"
#include "harness/worker/deepspeed_worker.h"
#include "harness/worker/shared_memory_buffers.h"

namespace trainrepro {
namespace {

constexpr const char* kServingWorkerMain = "deepspeed_engine_worker.py";
// A set asked to stop destroys its process group and exits in about a second; one that takes
// longer than this is killed.
constexpr std::chrono::seconds kSetStopGrace{30};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last `limit` bytes written to `path` after `offset` ("…" first when cut): one job's share
// of the set's output, which all its jobs append to.
std::string output_since(const std::string& path, uintmax_t offset, size_t limit) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error || size <= offset) return "";
  const uintmax_t begin = std::max<uintmax_t>(offset, size > limit ? size - limit : 0);
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(begin));
  std::string text(static_cast<size_t>(size - begin), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return begin > offset ? "…" + text : text;
}

ServedAnswer::Status status_named(const std::string& name) {
  if (name == "answered") return ServedAnswer::Status::answered;
  if (name == "no_trace") return ServedAnswer::Status::no_trace;
  return ServedAnswer::Status::ranks_died;
}

}  // namespace

WorkerSet::WorkerSet(const std::vector<std::string>& python_command, int world_size,
                     const std::string& engine) {
  write_worker_sources(folder_.path());
  serve_folder_ = folder_.path() + "/serve";
  std::filesystem::create_directory(serve_folder_);
  std::vector<std::string> arguments = with_private_caches(python_command, folder_.path());
  arguments.insert(arguments.end(), {folder_.path() + "/" + kServingWorkerMain, "--serve",
                                     serve_folder_, std::to_string(world_size), engine});
  coordinator_ = std::make_unique<BackgroundProcess>(arguments, folder_.path() + "/output.txt");
}

WorkerSet::~WorkerSet() { close(); }

std::string WorkerSet::job_folder(int n) const {
  return folder_.path() + "/job-" + std::to_string(n);
}

ServedAnswer WorkerSet::serve(nlohmann::json job, int timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  const int n = ++jobs_;
  const std::string output_path = folder_.path() + "/output.txt";
  std::error_code error;
  const uintmax_t output_before = std::filesystem::file_size(output_path, error);
  std::filesystem::create_directory(job_folder(n));
  ServedAnswer answer;
  answer.prefix = job_folder(n) + "/trace";
  job["trace"] = answer.prefix;
  write_file_atomically(serve_folder_ + "/job-" + std::to_string(n) + ".json", job.dump());

  const std::string answer_path = serve_folder_ + "/answer-" + std::to_string(n) + ".json";
  const WaitEnd end = coordinator_->wait_until(
      [&] { return std::filesystem::exists(answer_path); }, deadline);
  if (end == WaitEnd::timed_out || end == WaitEnd::stopped) coordinator_->end();
  answer.output = output_since(output_path, error ? 0 : output_before, 4000);
  answer.exit_code = coordinator_->exit_code();
  switch (end) {
    case WaitEnd::timed_out:
      answer.status = ServedAnswer::Status::timed_out;
      return answer;
    case WaitEnd::stopped:
      answer.status = ServedAnswer::Status::stopped;
      answer.stopped_by_signal = coordinator_->stop_signal();
      return answer;
    case WaitEnd::ended:
      answer.status = ServedAnswer::Status::set_ended;
      return answer;
    case WaitEnd::done:
      break;
  }
  answer.answer = read_whole_file(answer_path);
  try {
    const nlohmann::json said = nlohmann::json::parse(answer.answer);
    answer.status = status_named(said.at("status").get<std::string>());
    answer.retired = said.at("retired").get<bool>();
  } catch (const nlohmann::json::exception&) {
    answer.status = ServedAnswer::Status::set_ended;  // not an answer it could have written
  }
  return answer;
}

void WorkerSet::remove_job_folder(int n) {
  std::error_code ignored;
  std::filesystem::remove_all(job_folder(n), ignored);
}

void WorkerSet::close() {
  if (!coordinator_) return;
  if (coordinator_->running()) {
    std::ofstream(serve_folder_ + "/stop").close();
    if (!coordinator_->wait_for_end(kSetStopGrace)) coordinator_->end();
  }
  coordinator_.reset();
  remove_shared_memory_buffers(serve_folder_ + "/port");
  folder_.remove();
}

}  // namespace trainrepro
