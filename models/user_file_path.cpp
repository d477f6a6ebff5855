#include "models/user_file_path.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "harness/files/sha256.h"
#include "harness/json/printable.h"

namespace trainrepro {

UserFile read_user_file(ObjectReader& options, const std::string& key, const std::string& what) {
  UserFile file;
  file.as_written = options.required_string(key);
  if (file.as_written.empty()) {
    options.fail(key, "expected the path of " + what + " (relative to the scenario's folder), found \"\"");
  }
  const std::filesystem::path written(file.as_written);
  const std::filesystem::path path =
      written.is_absolute() ? written
                            : std::filesystem::path(options.file()).parent_path() / written;
  file.path = path.lexically_normal().string();
  std::error_code error;
  // A regular file only: a FIFO or a device (/dev/zero) would block or never end.
  if (!std::filesystem::is_regular_file(path, error)) {
    const bool exists = std::filesystem::exists(path, error);
    options.fail(key, "expected " + what + " (a file, relative to the scenario's folder), found \"" +
                          printable(file.as_written) + "\": " +
                          (exists ? "not a regular file" : "no such file") + " at " +
                          printable(file.path));
  }
  try {
    file.sha256 = sha256_of_file(file.path);
  } catch (const std::exception& failure) {
    options.fail(key, std::string("expected a readable file, found: ") + failure.what());
  }
  return file;
}

}  // namespace trainrepro
