// The host-side signals LibTorch's tensor allocators cannot see. A loss kept after backward()
// keeps its autograd graph's nodes alive on the host heap while its tensors are freed, so the
// heap in use (glibc mallinfo2) is sampled alongside tensor bytes; resident memory is the coarse
// third signal, and physical RAM the capacity an out-of-memory projection needs.
#pragma once
#include <cstdint>

namespace trainrepro {

int64_t host_heap_in_use_bytes();  // glibc: in-use bytes of every arena plus mmapped chunks
int64_t resident_set_bytes();      // /proc/self/statm
int64_t physical_ram_bytes();

}  // namespace trainrepro
