#include "harness/worker/shared_memory_buffers.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace trainrepro {

void remove_shared_memory_buffers(const std::string& port_file) {
  std::ifstream in(port_file);
  std::string port;
  if (!(in >> port) || port.find_first_not_of("0123456789") != std::string::npos) return;
  const std::string marker = "_127.0.0.1_" + port + "_";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("deepspeed_allreduce_buffer_", 0) == 0 &&
        name.find(marker) != std::string::npos) {
      std::filesystem::remove(entry.path(), error);
    }
  }
}

}  // namespace trainrepro
