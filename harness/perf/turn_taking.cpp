#include "harness/perf/turn_taking.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace trainrepro {
namespace {

// Reads one byte, retrying on signals; false at end of file or on an error.
bool read_byte(int fd) {
  char byte = 0;
  ssize_t got = 0;
  do {
    got = ::read(fd, &byte, 1);
  } while (got < 0 && errno == EINTR);
  return got == 1;
}

bool write_byte(int fd) {
  const char byte = 't';
  ssize_t put = 0;
  do {
    put = ::write(fd, &byte, 1);
  } while (put < 0 && errno == EINTR);
  return put == 1;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void TurnTaker::wait_for_turn() {
  if (!said_ready_) {
    end_turn();
    said_ready_ = true;
  }
  if (!read_byte(kTurnInput)) {
    throw std::runtime_error("--take-turns: no turn came on file descriptor 3 (the `perf compare` "
                             "that started this run has gone)");
  }
}

void TurnTaker::end_turn() {
  if (!write_byte(kTurnDone)) {
    throw std::runtime_error(std::string("--take-turns: cannot say the round is done on file "
                                         "descriptor 4: ") + std::strerror(errno));
  }
}

void TurnTaker::wait_for_the_end() {
  while (read_byte(kTurnInput)) {
  }
}

TurnWorker::TurnWorker(std::vector<std::string> arguments, const std::string& working_directory,
                       std::string log, double answer_seconds)
    : executable_(arguments.front()), log_(std::move(log)), answer_seconds_(answer_seconds) {
  // A worker that dies must not kill the coordinator when it next writes a turn.
  ::signal(SIGPIPE, SIG_IGN);
  int turn[2];
  int done[2];
  // Close-on-exec: the other worker must not hold these ends open, or a dead worker's end of
  // file would never arrive.
  if (::pipe2(turn, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  if (::pipe2(done, O_CLOEXEC) != 0) {
    ::close(turn[0]);
    ::close(turn[1]);
    throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, turn[0], TurnTaker::kTurnInput);
  posix_spawn_file_actions_adddup2(&actions, done[1], TurnTaker::kTurnDone);
  if (!working_directory.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, working_directory.c_str());
  }
  const int spawned = ::posix_spawn(&pid_, executable_.c_str(), &actions, nullptr, argv.data(),
                                    environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(turn[0]);
  ::close(done[1]);
  turn_fd_ = turn[1];
  done_fd_ = done[0];
  if (spawned != 0) {
    pid_ = -1;
    close_fd(turn_fd_);
    close_fd(done_fd_);
    throw std::runtime_error(executable_ + ": cannot start: " + std::strerror(spawned));
  }
}

TurnWorker::~TurnWorker() {
  close_fd(turn_fd_);
  close_fd(done_fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool TurnWorker::wait_for_answer() {
  pollfd answer{done_fd_, POLLIN, 0};
  const auto timeout = static_cast<int>(answer_seconds_ * 1000.0);
  int ready = 0;
  do {
    ready = ::poll(&answer, 1, timeout);
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    silent_ = true;
    ::kill(pid_, SIGKILL);
    return false;
  }
  return read_byte(done_fd_);
}

bool TurnWorker::wait_until_ready() { return wait_for_answer(); }

bool TurnWorker::take_turn() { return write_byte(turn_fd_) && wait_for_answer(); }

std::string TurnWorker::finish() {
  close_fd(turn_fd_);  // end of file: no more turns
  close_fd(done_fd_);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (silent_) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", answer_seconds_);
    return executable_ + " perf run did not finish a round within " + seconds +
           " s and was stopped; its output:\n" + text_of(log_);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) <= 1) return "";
  return executable_ + " perf run failed (" +
         (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                            : std::string("killed by a signal")) +
         "):\n" + text_of(log_);
}

}  // namespace trainrepro
