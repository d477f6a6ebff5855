// CPU tensor memory in the format of PyTorch's CUDA memory snapshot (torch.cuda.memory._snapshot:
// {"segments": […], "device_traces": [[…]]}, pickled), so a CPU leak opens in PyTorch's memory
// viewer (https://pytorch.org/memory_viz) and its Python tools (torch.cuda._memory_viz) like a
// GPU one. The CPU allocator has no segments: each live allocation is its own segment of one
// block, and addresses are positions in that list, not real pointers. The "stack" of each block
// names the optimizer step that allocated it, which is what a leak hunt needs: allocations born
// in every step and still alive.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/memory/counting_cpu_allocator.h"

namespace trainrepro {

std::string cpu_memory_snapshot_pickle(const std::vector<LiveAllocation>& live);

}  // namespace trainrepro
