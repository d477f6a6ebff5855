#include "harness/distributed/rank_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
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

}  // namespace

RankLaunch launch_ranks(int world_size, const std::vector<std::string>& rank_arguments,
                        int timeout_seconds) {
  char output_path[] = "/tmp/trainrepro-ranks-XXXXXX";
  const int output_fd = ::mkstemp(output_path);
  if (output_fd < 0) throw std::runtime_error(std::string("mkstemp: ") + std::strerror(errno));

  // As root Open MPI refuses to start without --allow-run-as-root; on a 2-core machine 4 ranks
  // need --oversubscribe; shared memory (vader) is all a single machine needs.
  std::vector<std::string> arguments = {"mpirun",
                                        "-np",
                                        std::to_string(world_size),
                                        "--allow-run-as-root",
                                        "--oversubscribe",
                                        "--mca",
                                        "btl",
                                        "self,vader",
                                        this_executable()};
  arguments.insert(arguments.end(), rank_arguments.begin(), rank_arguments.end());
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, output_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output_fd, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);  // its own group: one kill reaches every rank

  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, "mpirun", &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(output_fd);
  if (spawned != 0) {
    ::unlink(output_path);
    throw std::runtime_error(std::string("cannot start mpirun: ") + std::strerror(spawned));
  }

  RankLaunch launch;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      launch.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  launch.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  std::ifstream output(output_path);
  std::stringstream text;
  text << output.rdbuf();
  launch.output = tail_of(text.str(), 4000);
  ::unlink(output_path);
  return launch;
}

}  // namespace trainrepro
