// Starts a scenario's ranks with mpirun when trainrepro itself was not started by an MPI
// launcher: one process per rank, in a process group of their own, so that a rank that dies or
// hangs ends the whole run within a bounded time instead of leaving the others waiting.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace trainrepro {

struct RankLaunch {
  int exit_code = 0;       // the command's (mpirun's); 128 + N when signal N ended it
  int killed_by = 0;       // the signal that ended the command itself, 0 when it exited
  // Processes the kernel's out-of-memory killer ended while the command ran (this process's
  // cgroup, else the machine: oom_kill_count.h); -1 when the count cannot be read.
  int64_t oom_kills = -1;
  bool timed_out = false;  // killed after timeout_seconds
  // SIGTERM, SIGINT or SIGHUP reached this process while the ranks ran: every process the
  // command started was stopped, and the caller should clean up, then end_by_signal(it).
  int stopped_by_signal = 0;
  std::string output;  // the last 4000 bytes mpirun and the ranks printed, for messages
};

// Runs `mpirun -np world_size … <this executable> <rank_arguments…>`. `work_folder` is the
// caller's private folder (create_rank_work_folder), which it removes afterwards: mpirun's output
// and Open MPI's shared-memory segments are written there.
RankLaunch launch_ranks(int world_size, const std::vector<std::string>& rank_arguments,
                        int timeout_seconds, const std::string& work_folder);

// The same for any command: `arguments[0]` (looked up on the PATH) in a process group of its own,
// its output and errors to `output_path` (created, never overwritten) and, as they are written,
// to `echo` when given (copied in bounded chunks: a command may print gigabytes). When the
// command ends, times out, or a stop signal reaches this process, every process it started
// (found through /proc while this process is their subreaper, whatever session they are in)
// gets SIGTERM, 10 s to end, then SIGKILL (process_tree.h). The command gets SIGTERM if this
// process dies (PR_SET_PDEATHSIG: the launching thread must outlive the launch; it does, the
// call blocks). Throws std::runtime_error when it cannot start.
RankLaunch launch_process_group(std::vector<std::string> arguments, int timeout_seconds,
                                const std::string& output_path, std::ostream* echo = nullptr);

// The last `limit` bytes of a file ("…" first when cut), without reading the rest.
std::string tail_of_file(const std::string& path, size_t limit);

// Ends this process as `signal` would have without a handler (exit status 128 + signal).
[[noreturn]] void end_by_signal(int signal);

}  // namespace trainrepro
