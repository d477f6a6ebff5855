// The memory a Python engine worker measured (python/trainrepro_worker/memory_census.py), read
// into the Trace fields the reference engine's probes fill (memory samples, the tensor storages
// alive at the end with their birth steps, what a kept tensor costs the host heap), so that the
// same memory judge reads them. Read strictly: every field required, typed and in range.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/loop/trace.h"

namespace trainrepro {

// `memory` is the trace's "memory" object; `where` is "FILE:/memory", the start of every error
// (a WorkerTraceError). `optimizer_steps`: the steps the trace recorded, which no sample exceeds.
void read_worker_memory(const nlohmann::json& memory, const std::string& where,
                        int64_t optimizer_steps, Trace& trace);

}  // namespace trainrepro
