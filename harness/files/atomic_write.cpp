#include "harness/files/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace trainrepro {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::error_code error;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), error);
    if (error) {
      throw std::runtime_error(path.string() + ": cannot create its folder: " + error.message());
    }
  }
  // A fresh temporary beside the target, created exclusively (mkstemp: O_CREAT|O_EXCL, a random
  // name): a symlink planted at a predictable name can never redirect the write, and concurrent
  // runs never share one. rename() then replaces the target itself, never what a link names.
  std::string temporary_name = path.string() + ".tmp.XXXXXX";
  const int fd = ::mkostemp(temporary_name.data(), O_CLOEXEC);
  const std::filesystem::path temporary = temporary_name;
  if (fd < 0) fail(temporary, "cannot create");
  // mkstemp makes the file 0600; results and goldens are for others to read too.
  ::fchmod(fd, 0644);

  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      errno = saved;
      fail(temporary, "cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail(temporary, "cannot flush to disk");
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail(path, "cannot move the new file into place");
  }
}

}  // namespace trainrepro
