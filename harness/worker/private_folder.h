// A worker's private folder (0700, under $TMPDIR), removed whatever happens; and what a stop
// signal that reached a worker's process group does to this process.
#pragma once
#include <filesystem>
#include <string>
#include <system_error>

#include "harness/distributed/rank_launcher.h"
#include "harness/distributed/rank_work_folder.h"

namespace trainrepro {

// Removes the folder whatever happens between; a stop signal ends the process afterwards.
class PrivateFolder {
 public:
  PrivateFolder() : path_(create_rank_work_folder()) {}
  ~PrivateFolder() { remove(); }
  void remove() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
    path_.clear();
  }
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void end_if_stopped(const RankLaunch& launch, PrivateFolder& folder) {
  if (launch.stopped_by_signal == 0) return;
  folder.remove();  // end_by_signal does not return: clean up first
  end_by_signal(launch.stopped_by_signal);
}

}  // namespace trainrepro
