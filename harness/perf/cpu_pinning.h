// Keeping a measurement on one CPU. On a shared virtual machine each virtual CPU has its own
// neighbours on the host, and a process mostly stays on the CPU it started on: measured here, the
// same build's judged step moved 4-10 % between two processes (and a planted +10 % once read as
// 0.92) until both were pinned to the same CPU, after which two builds measured in turns agreed
// within 3 % (A/A) and a planted +10 % read as +10 to +12 % in each of four tries.
#pragma once
#include <optional>
#include <vector>

namespace trainrepro {

// The highest-numbered CPU this process may run on (CPU 0 usually takes the interrupts).
int last_allowed_cpu();

// Moves every thread of this process to `cpu`, and with them every thread they start later.
// Throws std::runtime_error naming the CPU when the system refuses.
void pin_process_to_cpu(int cpu);

// The CPUs this process may run on, in increasing order.
std::vector<int> allowed_cpus();

// The CPU each rank of a multi-rank measurement takes, rank 0 first: the CPU a one-rank
// measurement runs on (`pinned`, or the last allowed one), then the other allowed CPUs from the
// highest down. Ranks on CPUs of their own do not steal each other's time slices, and rank 0,
// which times the steps, runs where the one-rank benchmarks of the same run do.
std::vector<int> rank_cpu_order(const std::vector<int>& allowed, std::optional<int> pinned);

}  // namespace trainrepro
