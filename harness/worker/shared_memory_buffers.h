// DeepSpeed's CPU all-reduce buffers (/dev/shm/deepspeed_allreduce_buffer_<n>_127.0.0.1_<port>_<k>,
// 67 MB each, RAM) outlive every process that used them: removed by the port its workers used,
// however they ended (a killed worker cannot remove them itself).
#pragma once
#include <string>

namespace trainrepro {

// Removes the buffers of the port written in `port_file` (the worker's; nothing when it is
// missing or holds anything but digits).
void remove_shared_memory_buffers(const std::string& port_file);

}  // namespace trainrepro
