// What the recordings folder says of how the watched command's processes ended, for the watch's
// messages: the ranks that created a DeepSpeed engine (engine-rank<R>.json, written by
// trainrepro_watch.py), and the processes a launcher saw killed by a signal (exit-<pid>.json,
// written by sitecustomize.py's subprocess.Popen hook) named by rank (process-<pid>.json).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/distributed/rank_launcher.h"

namespace trainrepro {

// The ranks whose deepspeed.initialize returned an engine, in order.
std::vector<int64_t> ranks_with_an_engine(const std::string& recordings_folder);

// "rank 1 (pid 4242) was killed by SIGKILL, by the kernel's out-of-memory killer (…)", one per
// process killed by a signal: the ranks a launcher reaped, then the command itself. Empty when
// none was. The OOM killer is named where its count rose during the launch and the signal was
// SIGKILL, the one it sends.
std::vector<std::string> signal_deaths(const std::string& recordings_folder,
                                       const RankLaunch& launch);

// "SIGKILL", "SIGSEGV", …; "signal N" for the rest.
std::string signal_name(int signal);

}  // namespace trainrepro
