// What launch_process_group (rank_launcher.h) and a background process (background_process.h)
// share: a command started in a process group of its own that dies with this process, and the
// stop signals (SIGTERM, SIGINT, SIGHUP) that must end it rather than leave it behind.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace trainrepro {

// The file execvp would run for `name` ("" when none): looked up before fork, since execvp is
// not async-signal-safe.
std::string find_on_path(const std::string& name);

// What both launches do before they fork: `arguments[0]` found on PATH, the output file created
// (0600; an existing file or a link is refused) and the argv, pointing into `arguments`, which
// must outlive it. Throws std::runtime_error naming what failed.
struct ChildCommand {
  std::string program;
  int output_fd = -1;
  std::vector<char*> argv;
};
ChildCommand prepare_child(std::vector<std::string>& arguments, const std::string& output_path);

// Starts `program` in a process group of its own, output and errors to `output_fd`, asking for
// SIGTERM when the calling thread dies (PR_SET_PDEATHSIG). Returns the child's pid; throws
// std::runtime_error with exec's error when the program cannot run.
pid_t start_child(const std::string& program, std::vector<char*>& argv, int output_fd);

// Starts the prepared command with the stop signals held until `register_group` has recorded its
// group (so that a stop signal's handler always knows the group to end), then closes the output
// file. Returns "" when started, else why not (exec's error, or register_group's answer).
std::string start_with_stops_held(ChildCommand& child, pid_t& pid,
                                  const std::function<std::string(pid_t)>& register_group);

// Installs (once) the handler that notes a stop signal while a command is waited for, and
// otherwise signals the spared process groups and ends this process by that signal.
void install_stop_handlers();
sigset_t stop_signal_set();

// Between these, a stop signal is noted (noted_stop_signal) for the loop waiting on `pid`, which
// ends the command, cleans up and then calls end_by_signal.
void begin_waiting_for(pid_t pid);
void end_waiting();
int noted_stop_signal();  // 0 when none came

}  // namespace trainrepro
