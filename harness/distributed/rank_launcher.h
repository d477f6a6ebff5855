// Starts a scenario's ranks with mpirun when trainrepro itself was not started by an MPI
// launcher: one process per rank, in a process group of their own, so that a rank that dies or
// hangs ends the whole run within a bounded time instead of leaving the others waiting.
#pragma once
#include <string>
#include <vector>

namespace trainrepro {

struct RankLaunch {
  int exit_code = 0;       // mpirun's
  bool timed_out = false;  // killed after timeout_seconds
  // SIGTERM, SIGINT or SIGHUP reached this process while the ranks ran: they were killed at
  // once (the whole group), and the caller should clean up, then end_by_signal(it).
  int stopped_by_signal = 0;
  std::string output;  // what mpirun and the ranks printed (the tail, for messages)
};

// Runs `mpirun -np world_size … <this executable> <rank_arguments…>`. `work_folder` is the
// caller's private folder (create_rank_work_folder), which it removes afterwards: mpirun's output
// and Open MPI's shared-memory segments are written there.
RankLaunch launch_ranks(int world_size, const std::vector<std::string>& rank_arguments,
                        int timeout_seconds, const std::string& work_folder);

// The same for any command: `arguments[0]` (looked up on the PATH) in a process group of its own,
// its output and errors to `output_path` (created, never overwritten), the whole group killed
// after timeout_seconds or when a stop signal reaches this process. Throws std::runtime_error
// when it cannot start.
RankLaunch launch_process_group(std::vector<std::string> arguments, int timeout_seconds,
                                const std::string& output_path);

// Ends this process as `signal` would have without a handler (exit status 128 + signal).
[[noreturn]] void end_by_signal(int signal);

}  // namespace trainrepro
