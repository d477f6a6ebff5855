// Runs the user's own training command under watch: the watch module (python/trainrepro_watch,
// compiled in) is written into a private folder put first on PYTHONPATH, so every Python process
// the command starts (torchrun's, deepspeed's, or plain python's ranks) imports it; the
// recordings land in that folder too. Nothing is installed, and nothing of the user's is
// written or changed.
#pragma once
#include <string>
#include <vector>

#include "harness/distributed/rank_launcher.h"
#include "harness/worker/private_folder.h"

namespace trainrepro {

struct WatchSettings {
  std::vector<std::string> command;  // what the user would have typed: torchrun … train.py …
  int64_t steps = 4;                 // optimizer steps watched (windows)
  int64_t memory_steps = 40;         // optimizer steps whose boundaries memory is sampled at
  int timeout_seconds = 3600;        // the whole command's, killed with its process group after
  bool save = false;                 // record what --save-scenario needs (inputs, model)
  std::string loss = "auto";         // the golden's loss: auto, tokens, samples, mse, model
  std::string golden = "own";        // the golden's dtype: own (the run's) or float64
  int64_t coordinates = int64_t{1} << 18;  // gradient coordinates judged (0: every one)
  bool echo_output = true;           // the command's output to stdout as it is written
};

struct WatchLaunch {
  RankLaunch launch;              // the command's exit code, output, timeout, stop signal
  std::string recordings_folder;  // rank<R>.json / .safetensors, inside `folder`
  std::string output_file;        // everything the command printed (may be gigabytes)
};

// Runs the command to its end. Throws std::runtime_error when it cannot start.
WatchLaunch launch_watched(const WatchSettings& settings, const PrivateFolder& folder);

}  // namespace trainrepro
