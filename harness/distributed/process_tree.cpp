#include "harness/distributed/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

namespace trainrepro {
namespace {

struct ProcessEntry {
  pid_t pid = 0;
  pid_t parent = 0;
  char state = '?';
  int64_t start_ticks = -1;
};

// /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses, so the
// fields after it are read from the last ')'.
bool read_process_entry(pid_t pid, ProcessEntry& entry) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* file = std::fopen(path, "re");
  if (file == nullptr) return false;
  char text[1024];
  const size_t length = std::fread(text, 1, sizeof text - 1, file);
  std::fclose(file);
  text[length] = '\0';
  const char* after_name = std::strrchr(text, ')');
  if (after_name == nullptr) return false;
  char state = '?';
  int parent = 0;
  long long start = -1;
  // state(3) ppid(4) pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice num_threads itrealvalue starttime(22)
  if (std::sscanf(after_name + 1,
                  " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
                  "%lld",
                  &state, &parent, &start) < 2) {
    return false;
  }
  entry = {pid, static_cast<pid_t>(parent), state, static_cast<int64_t>(start)};
  return true;
}

std::vector<ProcessEntry> every_process() {
  std::vector<ProcessEntry> processes;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return processes;
  while (const dirent* item = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(item->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    ProcessEntry entry;
    if (read_process_entry(static_cast<pid_t>(pid), entry)) processes.push_back(entry);
  }
  ::closedir(proc);
  return processes;
}

// Descendants of this process, zombies included (a zombie's children, if any, are already ours).
std::vector<ProcessEntry> descendant_entries() {
  const std::vector<ProcessEntry> processes = every_process();
  std::set<pid_t> family = {::getpid()};
  std::vector<ProcessEntry> found;
  // Parent links point up; a few passes reach every depth (a new depth per pass at worst).
  for (bool grew = true; grew;) {
    grew = false;
    for (const ProcessEntry& entry : processes) {
      if (family.count(entry.parent) != 0 && family.insert(entry.pid).second) {
        found.push_back(entry);
        grew = true;
      }
    }
  }
  return found;
}

// Reaps the zombies that are this process's children; returns the live descendants.
std::vector<pid_t> reap_and_list(std::map<pid_t, int>& reaped) {
  std::vector<pid_t> live;
  for (const ProcessEntry& entry : descendant_entries()) {
    if (entry.state != 'Z') {
      live.push_back(entry.pid);
    } else if (entry.parent == ::getpid()) {
      int status = 0;
      if (::waitpid(entry.pid, &status, WNOHANG) == entry.pid) reaped[entry.pid] = status;
    }
  }
  return live;
}

}  // namespace

int64_t process_start_ticks(pid_t pid) {
  ProcessEntry entry;
  return read_process_entry(pid, entry) ? entry.start_ticks : -1;
}

bool become_child_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

void stop_being_child_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0); }

std::vector<pid_t> live_descendants() {
  std::vector<pid_t> live;
  for (const ProcessEntry& entry : descendant_entries()) {
    if (entry.state != 'Z') live.push_back(entry.pid);
  }
  return live;
}

std::map<pid_t, int> end_descendants(std::chrono::milliseconds grace) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kPoll = std::chrono::milliseconds(20);
  std::map<pid_t, int> reaped;
  std::set<pid_t> asked;  // sent SIGTERM already
  const auto polite_until = Clock::now() + grace;
  const auto give_up = polite_until + std::chrono::seconds(30);
  while (true) {
    const std::vector<pid_t> live = reap_and_list(reaped);
    if (live.empty()) break;
    const bool polite = Clock::now() < polite_until;
    if (!polite && Clock::now() > give_up) break;
    for (pid_t pid : live) {
      if (!polite) {
        ::kill(pid, SIGKILL);
      } else if (asked.insert(pid).second) {
        ::kill(pid, SIGTERM);
        ::kill(pid, SIGCONT);  // a stopped process (Ctrl-Z, SIGSTOP) acts on SIGTERM only then
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
  return reaped;
}

}  // namespace trainrepro
