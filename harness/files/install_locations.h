// Where trainrepro finds what it did not compile in: the Python whose torch built it, and the
// cache outside any clone (the torch venv, DeepSpeed releases) that scripts/env.sh also uses.
// What the cache holds is run as the user (a release's __init__.py), so it must be the user's
// own: never a shared /tmp path, created 0700, refused when another user owns it or may write it.
#pragma once
#include <stdexcept>
#include <string>

namespace trainrepro {

// The cache cannot be used safely: owned by another user, writable by others, or no home folder
// to put it in (exit 3). The message names the folder and the fix.
class CacheFolderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// TRAINREPRO_TORCH_PYTHON when set and not empty, else the Python this build's LibTorch came
// from (scripts/build passes it to CMake).
std::string torch_python_executable();

// $XDG_CACHE_HOME/trainrepro (when absolute), else <home>/.cache/trainrepro with <home> from
// HOME, or the passwd entry's when HOME is unset (cron, systemd units). Throws CacheFolderError
// when there is no home, or it holds ':'.
std::string default_cache_directory();

// TRAINREPRO_CACHE, else default_cache_directory(). Throws EnvironmentValueError (exit 2) when
// TRAINREPRO_CACHE is not an absolute path or holds ':' (it goes onto a worker's PYTHONPATH),
// CacheFolderError when there is no home.
std::string trainrepro_cache_directory();

// The cache, created (0700, missing parents too) when absent, then checked with
// require_own_folder.
std::string own_cache_directory();

// Where pip keeps what it downloads for a release install (sdists, wheels, build tools): the
// default cache's pip-downloads, whatever TRAINREPRO_CACHE says, so that a second cache (a test's,
// the oracle's) or a reinstall fetches nothing it fetched before; pip checks each file against
// the index's hash, and nothing there runs until installed. Created 0700 and checked as the cache
// is; where the default cache cannot be the user's own (no home), the cache's own pip-downloads.
std::string pip_downloads_directory();

// Throws CacheFolderError unless `path` is a folder owned by this process's user (geteuid) that
// neither its group nor others may write. `role` says what the folder is, for the message.
void require_own_folder(const std::string& path, const std::string& role);

}  // namespace trainrepro
