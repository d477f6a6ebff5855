// Finds and ends every process this one started, however it was started: ranks that torchrun
// puts in sessions of their own, children that double-fork, a background `sleep` a script leaves.
// A process group reaches none of those; the parent links in /proc do, and while this process
// is a child subreaper (PR_SET_CHILD_SUBREAPER) an orphaned descendant is re-parented to it
// instead of to init, so the chain never breaks.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

namespace trainrepro {

// Makes this process the one orphaned descendants are re-parented to, for as long as it lives.
// Returns false where the kernel refuses (before Linux 3.4). Counted: a launch that ends while a
// background one runs (background_process.h) must not take the role from it; the last stop
// clears it.
bool become_child_subreaper();
void stop_being_child_subreaper();

// Processes whose trees end_descendants leaves alone (worker sets kept across scenarios:
// background_process.h), and takes back. At most 16 at once; spare_process_tree returns false
// when that many are spared already.
bool spare_process_tree(pid_t root);
void unspare_process_tree(pid_t root);
// Sends `signal` (and SIGCONT) to the process group of every spared root (each leads its own).
// Async-signal-safe: a stop signal's handler calls it.
void signal_spared_process_groups(int signal);

// When the process started, in clock ticks since boot (/proc/<pid>/stat's starttime): with the
// pid, it names a process that a later one reusing the pid is not. -1 when it is gone.
int64_t process_start_ticks(pid_t pid);

// Every live (not zombie) process whose parent chain leads to this process, read from /proc.
std::vector<pid_t> live_descendants();

// Ends every descendant outside the spared trees: SIGTERM to each (newcomers too), up to `grace`
// for all to exit, SIGKILL to the rest, repeated until none is left (given up after a further
// 30 s: a process stuck in the kernel (state D) dies only when it leaves it). Zombies that are
// this process's children are reaped; returns their wait statuses by pid.
std::map<pid_t, int> end_descendants(std::chrono::milliseconds grace);

// The same for `root` (a child of this process, spared or not) and its descendants alone.
std::map<pid_t, int> end_process_tree(pid_t root, std::chrono::milliseconds grace);

}  // namespace trainrepro
