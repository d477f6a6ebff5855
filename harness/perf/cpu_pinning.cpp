#include "harness/perf/cpu_pinning.h"

#include <sched.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace trainrepro {

int last_allowed_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 0;
  for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu) {
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  }
  return 0;
}

void pin_process_to_cpu(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    throw std::runtime_error("CPU " + std::to_string(cpu) + ": no such CPU");
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  // Threads already started (a thread pool) keep their own mask: set each one's.
  std::error_code error;
  bool any = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const pid_t thread = static_cast<pid_t>(std::stol(task.path().filename().string()));
    if (::sched_setaffinity(thread, sizeof one, &one) != 0 && errno != ESRCH) {
      throw std::runtime_error("cannot run on CPU " + std::to_string(cpu) + ": " +
                               std::strerror(errno));
    }
    any = true;
  }
  if (!any && ::sched_setaffinity(0, sizeof one, &one) != 0) {
    throw std::runtime_error("cannot run on CPU " + std::to_string(cpu) + ": " +
                             std::strerror(errno));
  }
}

std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {0};
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> rank_cpu_order(const std::vector<int>& allowed, std::optional<int> pinned) {
  std::vector<int> order;
  if (pinned) order.push_back(*pinned);
  for (auto cpu = allowed.rbegin(); cpu != allowed.rend(); ++cpu) {
    if (!pinned || *cpu != *pinned) order.push_back(*cpu);
  }
  return order;
}

}  // namespace trainrepro
