#include "harness/distributed/rank_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

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

std::string tail_of(const std::string& text, size_t limit) {
  return text.size() <= limit ? text : "…" + text.substr(text.size() - limit);
}

// Stopping trainrepro (timeout's SIGTERM, Ctrl-C, a closed terminal) while ranks run must not
// leave mpirun and the ranks behind: mpirun runs in a process group of its own, which the
// terminal's signals never reach. The handler kills that group and notes the signal; the launch
// loop sees it, and the caller cleans up and ends by the same signal. With no ranks running the
// signal ends the process as usual. A group still alive 3 s after SIGTERM gets SIGKILL.
std::atomic<pid_t> running_group{0};
volatile std::sig_atomic_t stop_signal = 0;
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};

void on_stop_signal(int signal) {
  const pid_t group = running_group.load();
  if (group <= 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  stop_signal = signal;
  ::kill(-group, SIGTERM);  // mpirun passes it on to the ranks and removes its session files
}

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

}  // namespace

void end_by_signal(int signal) {
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
                                const std::string& output_path) {
  install_stop_handlers();
  const int output_fd =
      ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (output_fd < 0) {
    throw std::runtime_error("cannot create " + output_path + ": " + std::strerror(errno));
  }
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, output_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output_fd, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group: one kill reaches every rank
  sigset_t nothing_blocked;
  sigemptyset(&nothing_blocked);
  posix_spawnattr_setsigmask(&attributes, &nothing_blocked);

  // No stop signal between the spawn and the registration of the group: it is held until then.
  const sigset_t stops = stop_signal_set();
  sigset_t previous;
  ::sigprocmask(SIG_BLOCK, &stops, &previous);

  pid_t pid = 0;
  const int spawned =
      ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  if (spawned == 0) running_group = pid;
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(output_fd);
  if (spawned != 0) {
    throw std::runtime_error("cannot start " + arguments[0] + ": " + std::strerror(spawned));
  }

  RankLaunch launch;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (stop_signal != 0) {  // the handler sent the group SIGTERM
      const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      while (::waitpid(pid, &status, WNOHANG) != pid) {
        if (std::chrono::steady_clock::now() > grace) {
          ::kill(-pid, SIGKILL);
          ::waitpid(pid, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      // mpirun is gone; a rank that ignored SIGTERM is not.
      ::kill(-pid, SIGKILL);
      launch.stopped_by_signal = stop_signal;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      launch.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  running_group = 0;
  if (stop_signal != 0) launch.stopped_by_signal = stop_signal;
  launch.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  std::ifstream output(output_path);
  std::stringstream text;
  text << output.rdbuf();
  launch.output = tail_of(text.str(), 4000);
  return launch;
}

}  // namespace trainrepro
