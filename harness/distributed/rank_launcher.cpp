#include "harness/distributed/rank_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "harness/distributed/child_start.h"
#include "harness/distributed/oom_kill_count.h"
#include "harness/distributed/process_tree.h"

extern char** environ;

namespace trainrepro {
namespace {

std::string this_executable() {
  char path[4096];
  const ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) throw std::runtime_error("cannot find this executable (/proc/self/exe)");
  path[length] = '\0';
  return path;
}

// How long the command's processes have, after SIGTERM, to end on their own (a rank saving a
// checkpoint, torchrun or mpirun passing the signal on and reaping their ranks) before SIGKILL:
// `docker stop`'s default. torchrun itself waits 30 s for its ranks; a rank that needs longer
// than 10 s to stop is killed by us first.
constexpr std::chrono::seconds kPoliteStop{10};

// Stopping trainrepro (timeout's SIGTERM, Ctrl-C, a closed terminal) while a command runs must
// not leave it behind: the command runs in a process group of its own, which the terminal's
// signals never reach, and its ranks may be in sessions of their own (torchrun). The handler
// only notes the signal; the launch loop sees it, ends every descendant (end_descendants) and
// returns, and the caller cleans up and ends by the same signal. With no command running the
// signal ends the process as usual.
std::atomic<pid_t> running_group{0};
volatile std::sig_atomic_t stop_signal = 0;
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};

void on_stop_signal(int signal) {
  if (running_group.load() <= 0) {
    // Worker sets kept across scenarios (background_process.h) end with this process: their
    // coordinators remove what they made when SIGTERM reaches them.
    signal_spared_process_groups(SIGTERM);
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  stop_signal = signal;
}

}  // namespace

void install_stop_handlers() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    for (int signal : kStopSignals) ::sigaction(signal, &action, nullptr);
    return true;
  }();
  (void)installed;
}

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : kStopSignals) sigaddset(&set, signal);
  return set;
}

// The file execvp would run, looked up here: between fork and exec only async-signal-safe calls
// are allowed (LibTorch's threads may hold malloc's locks), and execvp is not one.
std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string folders = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t begin = 0; begin <= folders.size();) {
    size_t end = folders.find(':', begin);
    if (end == std::string::npos) end = folders.size();
    const std::string folder = end > begin ? folders.substr(begin, end - begin) : ".";
    const std::string candidate = folder + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
    begin = end + 1;
  }
  return "";
}

// Starts `program` in a process group of its own, output and errors to `output_fd`. The child
// asks for SIGTERM when this thread dies (PR_SET_PDEATHSIG: trainrepro killed by SIGKILL, or a
// crash): torchrun, deepspeed's launcher and mpirun pass SIGTERM on to their ranks. Returns the
// child's pid; throws with exec's error when the program cannot run.
ChildCommand prepare_child(std::vector<std::string>& arguments, const std::string& output_path) {
  ChildCommand child;
  child.program = find_on_path(arguments.at(0));
  if (child.program.empty()) {
    throw std::runtime_error("cannot start " + arguments[0] + ": " + std::strerror(ENOENT) +
                             " (not found on PATH)");
  }
  child.output_fd =
      ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (child.output_fd < 0) {
    throw std::runtime_error("cannot create " + output_path + ": " + std::strerror(errno));
  }
  for (std::string& argument : arguments) child.argv.push_back(argument.data());
  child.argv.push_back(nullptr);
  return child;
}

std::string start_with_stops_held(ChildCommand& child, pid_t& pid,
                                  const std::function<std::string(pid_t)>& register_group) {
  const sigset_t stops = stop_signal_set();
  sigset_t previous;
  ::sigprocmask(SIG_BLOCK, &stops, &previous);
  std::string start_error;
  try {
    pid = start_child(child.program, child.argv, child.output_fd);
    start_error = register_group(pid);
  } catch (const std::runtime_error& error) {
    start_error = error.what();
  }
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  ::close(child.output_fd);
  return start_error;
}

pid_t start_child(const std::string& program, std::vector<char*>& argv, int output_fd) {
  int exec_error[2];
  if (::pipe2(exec_error, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {  // the child: async-signal-safe calls only, until exec
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // trainrepro died before the request was made
    ::dup2(output_fd, STDOUT_FILENO);
    ::dup2(output_fd, STDERR_FILENO);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int signal : kStopSignals) ::sigaction(signal, &default_action, nullptr);
    sigset_t nothing_blocked;
    sigemptyset(&nothing_blocked);
    ::sigprocmask(SIG_SETMASK, &nothing_blocked, nullptr);
    ::execve(program.c_str(), argv.data(), environ);
    const int error = errno;
    (void)!::write(exec_error[1], &error, sizeof error);
    ::_exit(127);
  }
  const int fork_error = errno;
  ::close(exec_error[1]);
  if (pid < 0) {
    ::close(exec_error[0]);
    throw std::runtime_error(std::string("cannot fork: ") + std::strerror(fork_error));
  }
  int error = 0;
  ssize_t got;
  do {
    got = ::read(exec_error[0], &error, sizeof error);
  } while (got < 0 && errno == EINTR);
  ::close(exec_error[0]);
  if (got == sizeof error) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error(std::strerror(error));
  }
  return pid;
}

void begin_waiting_for(pid_t pid) { running_group = pid; }

void end_waiting() { running_group = 0; }

int noted_stop_signal() { return stop_signal; }

namespace {

// Copies what the command wrote to its output file since the last call to `echo`, 64 KiB at a
// time and at most 16 MiB per call (so that a command printing without pause cannot hold the
// launch loop away from its timeout): the output appears as it is written, with bounded memory.
// Returns the bytes copied.
size_t echo_new_output(std::ifstream& output, std::ostream& echo) {
  char buffer[64 * 1024];
  size_t copied = 0;
  while (copied < 16 * 1024 * 1024) {
    output.read(buffer, sizeof buffer);
    const std::streamsize got = output.gcount();
    if (got <= 0) break;
    echo.write(buffer, got);
    copied += static_cast<size_t>(got);
  }
  output.clear();  // past the end for now: more may come
  echo.flush();
  return copied;
}

}  // namespace

std::string tail_of_file(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff begin = std::max<std::streamoff>(0, size - static_cast<std::streamoff>(limit));
  in.seekg(begin);
  std::string text(static_cast<size_t>(size - begin), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return begin > 0 ? "…" + text : text;
}

void end_by_signal(int signal) {
  signal_spared_process_groups(SIGTERM);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
  std::_Exit(128 + signal);  // only if the signal is blocked
}

RankLaunch launch_ranks(int world_size, const std::vector<std::string>& rank_arguments,
                        int timeout_seconds, const std::string& work_folder) {
  // As root Open MPI refuses to start without --allow-run-as-root; on a 2-core machine 4 ranks
  // need --oversubscribe; shared memory (vader) is all a single machine needs. Its segment
  // files go to the work folder (by default /dev/shm, where a killed rank's segments stayed),
  // and so does Open MPI's session folder (by default in $TMPDIR, left behind by a kill too).
  std::vector<std::string> arguments = {"mpirun",
                                        "-np",
                                        std::to_string(world_size),
                                        "--allow-run-as-root",
                                        "--oversubscribe",
                                        "--mca",
                                        "btl",
                                        "self,vader",
                                        "--mca",
                                        "btl_vader_backing_directory",
                                        work_folder,
                                        "--mca",
                                        "orte_tmpdir_base",
                                        work_folder,
                                        this_executable()};
  arguments.insert(arguments.end(), rank_arguments.begin(), rank_arguments.end());
  return launch_process_group(arguments, timeout_seconds, work_folder + "/mpirun-output.txt");
}

RankLaunch launch_process_group(std::vector<std::string> arguments, int timeout_seconds,
                                const std::string& output_path, std::ostream* echo) {
  install_stop_handlers();
  ChildCommand child = prepare_child(arguments, output_path);
  // Orphans of the command (ranks whose launcher died, a script's background child) become
  // this process's children, so end_descendants still finds them through their parent links.
  become_child_subreaper();
  const int64_t oom_kills_before = oom_kill_count();
  pid_t pid = 0;
  const std::string start_error = start_with_stops_held(child, pid, [](pid_t started) {
    running_group = started;
    return std::string();
  });
  if (!start_error.empty()) {
    stop_being_child_subreaper();
    throw std::runtime_error("cannot start " + arguments[0] + ": " + start_error);
  }

  std::ifstream output(output_path, std::ios::binary);
  RankLaunch launch;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  bool ended = false;
  while (true) {
    if (echo != nullptr) echo_new_output(output, *echo);
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ended = true;
      break;
    }
    if (stop_signal != 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      launch.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Whatever ended the launch, nothing the command started outlives it: its background
  // children after a normal end, every rank after a timeout or a stop signal.
  const std::map<pid_t, int> reaped = end_descendants(kPoliteStop);
  if (!ended) {
    const auto found = reaped.find(pid);
    if (found != reaped.end()) {
      status = found->second;
    } else {
      ::waitpid(pid, &status, 0);
    }
  }
  running_group = 0;
  stop_being_child_subreaper();
  // The command is gone: what it wrote faster than the loop copied (16 MiB a turn) is copied
  // to its end now (a 200 MB burst lost its last 4.5 MB on a loaded machine before).
  if (echo != nullptr) {
    while (echo_new_output(output, *echo) > 0) {
    }
  }
  if (stop_signal != 0) launch.stopped_by_signal = stop_signal;
  launch.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  launch.killed_by = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  const int64_t oom_kills_after = oom_kill_count();
  launch.oom_kills = oom_kills_before >= 0 && oom_kills_after >= 0
                         ? std::max<int64_t>(0, oom_kills_after - oom_kills_before)
                         : -1;
  launch.output = tail_of_file(output_path, 4000);
  return launch;
}

}  // namespace trainrepro
