#include "harness/distributed/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
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

// Plain atomics, no lock: a stop signal's handler reads them (background_process.cpp).
constexpr int kMaxSpared = 16;
std::atomic<pid_t> spared_roots[kMaxSpared];
std::atomic<int> subreaper_holders{0};

bool is_spared(pid_t pid) {
  for (const auto& root : spared_roots) {
    if (root.load() == pid) return true;
  }
  return false;
}

// `root`'s descendants, zombies included (a zombie's children, if any, are already ours), and
// `root` itself unless it is this process; spared trees are left out of this process's.
std::vector<ProcessEntry> descendant_entries(pid_t root) {
  const std::vector<ProcessEntry> processes = every_process();
  const bool whole_family = root == ::getpid();
  std::set<pid_t> family = {root};
  std::vector<ProcessEntry> found;
  for (const ProcessEntry& entry : processes) {
    if (!whole_family && entry.pid == root) found.push_back(entry);
  }
  // Parent links point up; a few passes reach every depth (a new depth per pass at worst).
  for (bool grew = true; grew;) {
    grew = false;
    for (const ProcessEntry& entry : processes) {
      if (whole_family && is_spared(entry.pid)) continue;
      if (family.count(entry.parent) != 0 && family.insert(entry.pid).second) {
        found.push_back(entry);
        grew = true;
      }
    }
  }
  return found;
}

// Reaps the zombies that are this process's children; returns the live descendants.
std::vector<pid_t> reap_and_list(pid_t root, std::map<pid_t, int>& reaped) {
  std::vector<pid_t> live;
  for (const ProcessEntry& entry : descendant_entries(root)) {
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

bool become_child_subreaper() {
  ++subreaper_holders;
  return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

void stop_being_child_subreaper() {
  if (--subreaper_holders <= 0) {
    subreaper_holders = 0;
    ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  }
}

bool spare_process_tree(pid_t root) {
  for (auto& slot : spared_roots) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, root)) return true;
  }
  return false;
}

void unspare_process_tree(pid_t root) {
  for (auto& slot : spared_roots) {
    pid_t expected = root;
    slot.compare_exchange_strong(expected, 0);
  }
}

void signal_spared_process_groups(int signal) {
  for (const auto& slot : spared_roots) {
    const pid_t root = slot.load();
    if (root <= 0) continue;
    ::kill(-root, signal);
    ::kill(-root, SIGCONT);
  }
}

std::vector<pid_t> live_descendants() {
  std::vector<pid_t> live;
  for (const ProcessEntry& entry : descendant_entries(::getpid())) {
    if (entry.state != 'Z') live.push_back(entry.pid);
  }
  return live;
}

std::map<pid_t, int> end_descendants(std::chrono::milliseconds grace) {
  return end_process_tree(::getpid(), grace);
}

std::map<pid_t, int> end_process_tree(pid_t root, std::chrono::milliseconds grace) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kPoll = std::chrono::milliseconds(20);
  std::map<pid_t, int> reaped;
  std::set<pid_t> asked;  // sent SIGTERM already
  const auto polite_until = Clock::now() + grace;
  const auto give_up = polite_until + std::chrono::seconds(30);
  while (true) {
    const std::vector<pid_t> live = reap_and_list(root, reaped);
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
