// What an installed release's stamp (HOME/.trainrepro-complete, written last by
// install_release.py) says, and the check made before each use: the stamp lists every file the
// install wrote (path, size, sha256); each must still be there with its size, and the release's
// folders must be the user's own. A file deleted or changed since is named, with the fix, instead
// of a confusing import error later. Sizes, not digests: the check runs on every `run`.
#pragma once
#include <string>

namespace trainrepro {

enum class ReleaseStamp {
  missing,  // not installed, or an install that did not finish
  unlisted, // a stamp from an earlier trainrepro, without a file list: its files are listed
  listed,   // installed, with its file list
};

ReleaseStamp read_release_stamp(const std::string& home);

struct ReleaseCheck {
  size_t files = 0;    // files whose presence and size were checked
  size_t folders = 0;  // folders whose owner and mode were checked
};

// Throws DeepSpeedPythonError "<home> is incomplete or changed (<file>: why): remove it and rerun
// to reinstall", or CacheFolderError when a folder of it is another user's or others may write it.
ReleaseCheck check_installed_release(const std::string& home);

}  // namespace trainrepro
