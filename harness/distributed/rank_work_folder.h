// The private folder a multi-rank run works in: rank 0's result file, mpirun's output and Open
// MPI's shared-memory segments (btl vader) all live there, so removing the folder removes
// everything the run made, however the ranks ended. Ranks that are killed (a hung rank past
// --rank-timeout, a stop signal, a crash) never unlink their segments: in /dev/shm they stayed,
// two 4 MB files per killed run, until the machine rebooted.
#pragma once
#include <string>

namespace trainrepro {

// Creates `$TMPDIR/trainrepro-ranks-<pid>-XXXXXX` (mode 0700, a fresh name) and returns its path.
// First removes the folders of earlier trainrepro processes that no longer run (killed with
// SIGKILL before they could clean up). Throws std::runtime_error naming the folder on failure.
std::string create_rank_work_folder();

// Removes every folder of this kind whose process is gone, in `temp_folder`; returns how many.
int remove_stale_rank_work_folders(const std::string& temp_folder);

}  // namespace trainrepro
