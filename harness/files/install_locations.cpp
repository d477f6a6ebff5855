#include "harness/files/install_locations.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "harness/files/environment_values.h"
#include "harness/json/printable.h"

namespace trainrepro {
namespace {

std::string environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// HOME, or (unset under cron, systemd units, some CI runners) the user's passwd entry: a home of
// one's own, never a shared folder such as /tmp.
std::string home_directory() {
  if (std::string home = environment_value("HOME"); !home.empty() && home[0] == '/') return home;
  const passwd* entry = ::getpwuid(::geteuid());
  if (entry != nullptr && entry->pw_dir != nullptr && entry->pw_dir[0] == '/') {
    return entry->pw_dir;
  }
  throw CacheFolderError(
      "the trainrepro cache: HOME is not set and user " + std::to_string(::geteuid()) +
      " has no home folder in the password database; set TRAINREPRO_CACHE to a folder of your "
      "own (an absolute path)");
}

// mkdir -p with mode 0700 for every folder it creates (parents too: ~/.cache is private by the
// XDG rules); folders already there are left as they are and checked by the caller.
void create_private_folders(const std::string& path) {
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      throw CacheFolderError(path + " (the trainrepro cache): cannot create " + prefix + ": " +
                             std::strerror(errno));
    }
    if (at == std::string::npos) return;
  }
}

}  // namespace

std::string torch_python_executable() {
  const std::string chosen = environment_value("TRAINREPRO_TORCH_PYTHON");
  return chosen.empty() ? TRAINREPRO_TORCH_PYTHON_DEFAULT : chosen;
}

std::string default_cache_directory() {
  // The XDG rules: a relative XDG_CACHE_HOME is invalid and ignored.
  if (std::string xdg = environment_value("XDG_CACHE_HOME");
      !xdg.empty() && xdg[0] == '/' && xdg.find(':') == std::string::npos) {
    return xdg + "/trainrepro";
  }
  const std::string home = home_directory();
  if (home.find(':') != std::string::npos) {
    throw CacheFolderError("the trainrepro cache: the home folder " + printable(home) +
                           " holds ':'; set TRAINREPRO_CACHE to an absolute path without one");
  }
  return home + "/.cache/trainrepro";
}

std::string trainrepro_cache_directory() {
  if (std::string cache = environment_value("TRAINREPRO_CACHE"); !cache.empty()) {
    if (cache[0] != '/' || cache.find(':') != std::string::npos) {
      throw EnvironmentValueError(
          "TRAINREPRO_CACHE: expected an absolute path without ':' (a release's folders go onto "
          "a PYTHONPATH, which ':' splits); found " +
          printable_excerpt(cache));
    }
    while (cache.size() > 1 && cache.back() == '/') cache.pop_back();
    return cache;
  }
  return default_cache_directory();
}

std::string own_cache_directory() {
  const std::string cache = trainrepro_cache_directory();
  struct stat info {};
  if (::stat(cache.c_str(), &info) != 0) create_private_folders(cache);
  require_own_folder(cache, "the trainrepro cache");
  return cache;
}

std::string pip_downloads_directory() {
  try {
    const std::string shared = default_cache_directory() + "/pip-downloads";
    struct stat info {};
    if (::stat(shared.c_str(), &info) != 0) create_private_folders(shared);
    require_own_folder(shared, "pip's downloads for trainrepro");
    return shared;
  } catch (const CacheFolderError&) {
    // No home of one's own (or not one's own): the cache in use keeps its own downloads.
  }
  const std::string own = own_cache_directory() + "/pip-downloads";
  struct stat info {};
  if (::stat(own.c_str(), &info) != 0) create_private_folders(own);
  require_own_folder(own, "pip's downloads for trainrepro");
  return own;
}

void require_own_folder(const std::string& path, const std::string& role) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw CacheFolderError(printable(path) + " (" + role + "): " + std::strerror(errno));
  }
  const std::string named = printable(path) + " (" + role + ")";
  if (!S_ISDIR(info.st_mode)) throw CacheFolderError(named + ": expected a folder");
  if (info.st_uid != ::geteuid()) {
    throw CacheFolderError(
        named + ": owned by uid " + std::to_string(info.st_uid) + ", not by you (uid " +
        std::to_string(::geteuid()) +
        "): the code it holds would run as you. Use a cache of your own (TRAINREPRO_CACHE=an "
        "absolute path), or remove this folder");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw CacheFolderError(named + ": writable by " +
                           ((info.st_mode & S_IWOTH) != 0 ? "others" : "its group") + " (mode " +
                           mode + "): another user could plant code there that runs as you. " +
                           "Run chmod go-w " + printable(path) + ", or remove it");
  }
}

}  // namespace trainrepro
