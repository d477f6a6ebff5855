#include "harness/worker/release_manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/files/install_locations.h"
#include "harness/json/printable.h"
#include "harness/worker/deepspeed_worker.h"

namespace trainrepro {
namespace {

constexpr const char* kStamp = "/.trainrepro-complete";
constexpr int kStampFormat = 2;                  // install_release.py STAMP_FORMAT
constexpr std::streamsize kStampLimit = 64 << 20;  // 0.19.8's lists ~10k files in ~1.5 MB

nlohmann::json read_stamp(const std::string& home, bool& present) {
  std::ifstream in(home + kStamp, std::ios::binary | std::ios::ate);
  present = static_cast<bool>(in);
  if (!present) return nullptr;
  const std::streamsize size = in.tellg();
  if (size < 0 || size > kStampLimit) return nullptr;
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(text.data(), size);
  text.resize(static_cast<size_t>(in.gcount()));
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

[[noreturn]] void changed(const std::string& home, const std::string& file,
                          const std::string& why) {
  throw DeepSpeedPythonError(printable(home) + " is incomplete or changed (" + printable(file) +
                             ": " + why + "): remove it and rerun to reinstall");
}

}  // namespace

ReleaseStamp read_release_stamp(const std::string& home) {
  bool present = false;
  const nlohmann::json stamp = read_stamp(home, present);
  if (!present) return ReleaseStamp::missing;
  // A stamp that is not JSON at all was not written by any installer (they write it atomically):
  // listed, so that the check names it.
  if (stamp.is_object() && stamp.value("format", 0) != kStampFormat && !stamp.contains("files")) {
    return ReleaseStamp::unlisted;
  }
  return ReleaseStamp::listed;
}

ReleaseCheck check_installed_release(const std::string& home) {
  require_own_folder(home, "an installed DeepSpeed release");
  bool present = false;
  const nlohmann::json stamp = read_stamp(home, present);
  const std::string stamp_name = std::string(kStamp).substr(1);
  if (!stamp.is_object() || !stamp.contains("files") || !stamp["files"].is_array()) {
    changed(home, stamp_name, "not a stamp with a file list");
  }
  ReleaseCheck check;
  std::set<std::string> folders = {"site", "deps"};
  for (const nlohmann::json& file : stamp["files"]) {
    const std::string path =
        file.is_object() && file.contains("path") && file["path"].is_string() ? file["path"] : "";
    if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos ||
        !file.contains("size") || !file["size"].is_number_unsigned()) {
      changed(home, stamp_name, "an entry of its file list is not {path, size, sha256}");
    }
    struct stat info {};
    if (::lstat((home + "/" + path).c_str(), &info) != 0) changed(home, path, std::strerror(errno));
    if (!S_ISREG(info.st_mode)) changed(home, path, "no longer a regular file");
    if (static_cast<uint64_t>(info.st_size) != file["size"].get<uint64_t>()) {
      changed(home, path,
              std::to_string(info.st_size) + " bytes, installed with " +
                  std::to_string(file["size"].get<uint64_t>()));
    }
    if (info.st_uid != ::geteuid() || (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      changed(home, path, "another user owns it or may write it");
    }
    ++check.files;
    for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
      if (!folders.insert(path.substr(0, slash)).second) break;  // its parents are in already
    }
  }
  for (const std::string& folder : folders) {
    require_own_folder(home + "/" + folder, "a folder of an installed DeepSpeed release");
    ++check.folders;
  }
  return check;
}

}  // namespace trainrepro
