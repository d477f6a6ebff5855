#include "harness/files/file_chunks.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace trainrepro {

void for_each_file_chunk(const std::string& path,
                         const std::function<void(std::string_view chunk)>& consume) {
  const auto fail = [&path](int error) {
    throw std::runtime_error(path + ": cannot read: " + std::strerror(error));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(errno);
  std::array<char, 1 << 16> chunk;
  while (true) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      fail(error);
    }
    try {
      consume(std::string_view(chunk.data(), static_cast<size_t>(n)));
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  ::close(fd);
}

}  // namespace trainrepro
