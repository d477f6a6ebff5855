// `--engine deepspeed==VERSION`: a DeepSpeed release installed from PyPI into trainrepro's cache
// (cache/deepspeed-VERSION: site/, deps/, torch_extensions/, the stamp .trainrepro-complete), over
// the torch of the Python this build came from, on first use; nothing is installed anywhere else.
// python/trainrepro_worker/install_release.py does the installing (compiled in).
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/scenario/deepspeed_release.h"
#include "harness/worker/deepspeed_worker.h"

namespace trainrepro {

// What `--engine` names: the reference engine, the user's DeepSpeed, one release, or PyTorch's
// FSDP2.
struct EngineChoice {
  bool deepspeed = false;
  std::optional<std::string> release;  // "0.18.6" for deepspeed==0.18.6
  bool fsdp2 = false;
};

// Reads "reference", "deepspeed", "deepspeed==MAJOR.MINOR.PATCH" or "fsdp2"; throws
// std::invalid_argument saying what was expected (quoting at most 60 characters of `text`).
EngineChoice parse_engine_choice(const std::string& text);

// PyPI has no such release, or it was yanked, or a release or environment value that cannot be
// used (exit 2); the message names the nearest releases, or the value.
class DeepSpeedReleaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// MAJOR.MINOR.PATCH in ASCII digits (not "٠.١٩.٨"), each part 1-6 digits: what a release folder
// may be named after.
bool is_release_text(const std::string& text);

// The folder a release lives in (whether installed or not), in the cache, which is created
// (0700) and checked to be the user's own: CacheFolderError, EnvironmentValueError
// (TRAINREPRO_CACHE), DeepSpeedReleaseError (not a release).
std::string deepspeed_release_home(const std::string& release);

// The release's Python: installed first when its stamp is missing (unless TRAINREPRO_OFFLINE:
// DeepSpeedPythonError), its files checked against the stamp's list (check_installed_release),
// then asked for its versions within probe_timeout_seconds. Throws DeepSpeedReleaseError (no such
// release, or one known not to run over this torch: why_release_cannot_run), DeepSpeedPythonError (no network, pip failed, it does not import, a file is missing),
// CacheFolderError or EnvironmentValueError.
DeepSpeedPython managed_deepspeed_python(const std::string& release, int probe_timeout_seconds);

// The releases PyPI publishes from `good` to `bad`, both included, good first, yanked ones left
// out. A good release newer than the bad one asks which release fixed the bug: the list then runs
// newest first. Throws DeepSpeedReleaseError when either is not published (or yanked) or both
// are the same, DeepSpeedPythonError when PyPI cannot be reached.
std::vector<std::string> deepspeed_releases_between(const std::string& good,
                                                    const std::string& bad);

// The engine named on the command line, ready to train: the user's Python, the release's, or for
// FSDP2 a Python with torch (find_fsdp2_python).
DeepSpeedPython deepspeed_python_for(const EngineChoice& choice, int probe_timeout_seconds);

}  // namespace trainrepro
