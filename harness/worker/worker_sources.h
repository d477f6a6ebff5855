// The Python engine worker compiled in (python/trainrepro_worker: zoo.py, ds_worker.py,
// deepspeed_engine_worker.py, memory_census.py), written into a run's private folder when it
// starts, so the binary needs no checkout beside it.
#pragma once
#include <vector>

#include "harness/files/embedded_file.h"

namespace trainrepro {

const std::vector<EmbeddedFile>& worker_source_table();

}  // namespace trainrepro
