// A command that keeps running while this process goes on (the ranks that serve scenario after
// scenario: harness/worker/worker_set.h), with what launch_process_group guarantees a command
// it blocks on: a process group of its own, output to a file, SIGTERM when this process dies
// (PR_SET_PDEATHSIG), this process its orphans' subreaper, and a stop signal ends it (noted while
// it is waited for, else sent on to its group as this process ends). A blocking launch that ends
// meanwhile leaves its tree alone (spare_process_tree).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace trainrepro {

// How a wait_until ended.
enum class WaitEnd { done, ended, timed_out, stopped };

class BackgroundProcess {
 public:
  // Starts `arguments[0]` (looked up on the PATH), output and errors to `output_path` (created,
  // never overwritten). Throws std::runtime_error when it cannot start.
  BackgroundProcess(std::vector<std::string> arguments, const std::string& output_path);
  // Ends the command and its descendants when still running (end()).
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Whether the command still runs (it is reaped here once it ended).
  bool running();
  // Its exit code once it ended, 128 + N when signal N ended it; -1 while it runs.
  int exit_code() const { return exit_code_; }

  // Polls `done` every 10 ms until it is true, the command ends, `deadline` passes, or a stop
  // signal reaches this process (stop_signal() says which; the caller ends every background
  // process, cleans up, then end_by_signal).
  WaitEnd wait_until(const std::function<bool()>& done,
                     std::chrono::steady_clock::time_point deadline);
  // Waits up to `grace` for the command to end on its own (asked by its own channel).
  bool wait_for_end(std::chrono::milliseconds grace);
  // Ends the command and every process under it: SIGTERM, `grace`, then SIGKILL.
  void end(std::chrono::milliseconds grace = std::chrono::seconds(10));

  int stop_signal() const;

 private:
  void note_status(int status);
  void release();  // no longer spared, no longer the subreaper's reason

  pid_t pid_ = 0;
  int exit_code_ = -1;
  bool released_ = false;
};

}  // namespace trainrepro
