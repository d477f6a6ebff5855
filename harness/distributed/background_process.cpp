#include "harness/distributed/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "harness/distributed/child_start.h"
#include "harness/distributed/process_tree.h"

namespace trainrepro {

BackgroundProcess::BackgroundProcess(std::vector<std::string> arguments,
                                     const std::string& output_path) {
  install_stop_handlers();
  ChildCommand child = prepare_child(arguments, output_path);
  become_child_subreaper();
  // Spared before any stop signal is handled: a handler that ran between the start and the
  // sparing would not know the group to pass the signal on to.
  const std::string start_error = start_with_stops_held(child, pid_, [](pid_t started) {
    return spare_process_tree(started) ? std::string()
                                       : std::string("more than 16 background processes at once");
  });
  if (!start_error.empty()) {
    if (pid_ > 0) end();
    release();
    throw std::runtime_error("cannot start " + arguments[0] + ": " + start_error);
  }
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0 && !released_) end();
}

void BackgroundProcess::note_status(int status) {
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  release();
}

void BackgroundProcess::release() {
  if (released_) return;
  released_ = true;
  if (pid_ > 0) unspare_process_tree(pid_);
  stop_being_child_subreaper();
}

bool BackgroundProcess::running() {
  if (released_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    note_status(status);
    // Its ranks, orphaned if it did not end them, are this process's now: they go with it.
    end_descendants(std::chrono::seconds(10));
    return false;
  }
  return true;
}

WaitEnd BackgroundProcess::wait_until(const std::function<bool()>& done,
                                      std::chrono::steady_clock::time_point deadline) {
  begin_waiting_for(pid_);
  WaitEnd end = WaitEnd::done;
  while (true) {
    if (done()) break;
    if (!running()) {
      end = done() ? WaitEnd::done : WaitEnd::ended;  // it may have answered, then ended
      break;
    }
    if (noted_stop_signal() != 0) {
      end = WaitEnd::stopped;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      end = WaitEnd::timed_out;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  end_waiting();
  return end;
}

bool BackgroundProcess::wait_for_end(std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (running()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void BackgroundProcess::end(std::chrono::milliseconds grace) {
  if (released_) return;
  const std::map<pid_t, int> reaped = end_process_tree(pid_, grace);
  const auto found = reaped.find(pid_);
  int status = 0;
  if (found != reaped.end()) {
    status = found->second;
  } else if (::waitpid(pid_, &status, 0) != pid_) {
    status = 0;
  }
  note_status(status);
}

int BackgroundProcess::stop_signal() const { return noted_stop_signal(); }

}  // namespace trainrepro
