#include "harness/distributed/rank_work_folder.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace trainrepro {
namespace {

constexpr const char* kPrefix = "trainrepro-ranks-";

// The pid in `trainrepro-ranks-<pid>-XXXXXX`, or 0 when the name is not of that kind.
pid_t owner_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return 0;
  const std::string rest = name.substr(std::strlen(kPrefix));
  const size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || dash > 9) return 0;
  pid_t pid = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return 0;
    pid = pid * 10 + (rest[i] - '0');
  }
  return pid;
}

bool process_runs(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

int remove_stale_rank_work_folders(const std::string& temp_folder) {
  int removed = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(temp_folder, error)) {
    const pid_t owner = owner_of(entry.path().filename().string());
    if (owner <= 0 || owner == ::getpid() || process_runs(owner)) continue;
    // Only a real folder (a planted symlink is not followed: remove_all removes the link).
    if (!entry.is_directory(error) || entry.is_symlink(error)) continue;
    std::error_code ignored;
    if (std::filesystem::remove_all(entry.path(), ignored) > 0) ++removed;
  }
  return removed;
}

std::string create_rank_work_folder() {
  const std::string temp_folder = std::filesystem::temp_directory_path().string();
  remove_stale_rank_work_folders(temp_folder);
  std::string folder = (std::filesystem::path(temp_folder) /
                        (kPrefix + std::to_string(::getpid()) + "-XXXXXX"))
                           .string();
  if (::mkdtemp(folder.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary folder in " + temp_folder + ": " +
                             std::strerror(errno));
  }
  return folder;
}

}  // namespace trainrepro
