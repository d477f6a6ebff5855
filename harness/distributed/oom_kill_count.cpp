#include "harness/distributed/oom_kill_count.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trainrepro {
namespace {

// The value of the line "<key> <value>" in a file of such lines; -1 when absent.
int64_t counter_in(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string name;
  int64_t value = 0;
  while (in >> name >> value) {
    if (name == key) return value;
  }
  return -1;
}

// The memory cgroup files that may hold this process's count, most specific first: its own
// cgroup's (as /proc/self/cgroup names it), then the root of the mount (inside a container the
// cgroup namespace makes that the container's own).
std::vector<std::string> cgroup_count_files() {
  std::vector<std::string> files;
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) files.push_back("/sys/fs/cgroup" + path + "/memory.events");
    if (controllers == "memory") {
      files.push_back("/sys/fs/cgroup/memory" + path + "/memory.oom_control");
    }
  }
  files.push_back("/sys/fs/cgroup/memory.events");
  files.push_back("/sys/fs/cgroup/memory/memory.oom_control");
  return files;
}

}  // namespace

int64_t oom_kill_count() {
  for (const std::string& file : cgroup_count_files()) {
    const int64_t count = counter_in(file, "oom_kill");
    if (count >= 0) return count;
  }
  return counter_in("/proc/vmstat", "oom_kill");
}

}  // namespace trainrepro
