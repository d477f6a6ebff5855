// One set of DeepSpeed worker ranks that serves job after job (`run`'s default, issue 53):
// python/trainrepro_worker/serving.py's coordinator started with --serve in a private folder,
// so that Python, `import deepspeed` and the process group are paid once per set, not once per
// scenario. The channel is files renamed into place in that folder (serving.py's docstring).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/distributed/background_process.h"
#include "harness/worker/private_folder.h"

namespace trainrepro {

struct ServedAnswer {
  enum class Status {
    answered,    // the trace was published at `prefix`, as a one-shot worker publishes it
    no_trace,    // the ranks acknowledged the job but none wrote a trace
    ranks_died,  // a rank died without acknowledging (the coordinator killed the others)
    set_ended,   // the coordinator ended without answering
    timed_out,   // no answer within the timeout: the set was killed
    stopped,     // a stop signal reached this process while it waited: the set was killed
  };
  Status status = Status::set_ended;
  bool retired = true;        // the set serves no further job
  std::string prefix;         // the job's trace prefix
  std::string answer;         // the coordinator's answer as it wrote it ("" without one)
  std::string output;         // the tail of what the set printed since the job was handed over
  int exit_code = -1;         // the coordinator's, once it ended
  int stopped_by_signal = 0;  // stopped: the signal (the caller cleans up, then end_by_signal)
};

class WorkerSet {
 public:
  // Writes the worker's sources into a fresh private folder and starts
  // `python_command… deepspeed_engine_worker.py --serve FOLDER/serve world_size engine` there
  // (engine: "deepspeed" or "fsdp2", what its ranks import and train with).
  // Throws std::runtime_error when it cannot start.
  WorkerSet(const std::vector<std::string>& python_command, int world_size,
            const std::string& engine);
  // close()
  ~WorkerSet();
  WorkerSet(const WorkerSet&) = delete;
  WorkerSet& operator=(const WorkerSet&) = delete;

  // Hands `job` over (its "trace" is filled in: a folder of its own) and waits for its answer
  // up to timeout_seconds while the coordinator lives. A set that timed out or was stopped is
  // killed here; one whose answer says retired ends on its own (close() reaps it).
  ServedAnswer serve(nlohmann::json job, int timeout_seconds);
  // Removes job N's folder (its trace, once read).
  void remove_job_folder(int n);
  int jobs_handed_over() const { return jobs_; }
  // Whether its coordinator still runs (a rank that died between jobs ends it).
  bool running() { return coordinator_ && coordinator_->running(); }

  // Ends the set: asks it to stop, gives it 30 s, then kills what is left; removes DeepSpeed's
  // shared-memory buffers of its port and the private folder. Idempotent.
  void close();

 private:
  std::string job_folder(int n) const;

  PrivateFolder folder_;
  std::string serve_folder_;
  std::unique_ptr<BackgroundProcess> coordinator_;
  int jobs_ = 0;
};

}  // namespace trainrepro
