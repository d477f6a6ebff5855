#include "harness/memory/host_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>

namespace trainrepro {

int64_t host_heap_in_use_bytes() {
  const struct mallinfo2 info = ::mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

int64_t resident_set_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t total_pages = 0, resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

int64_t physical_ram_bytes() {
  return static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) *
         static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace trainrepro
