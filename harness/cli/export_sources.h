// The Python sources compiled in: what `trainrepro export --python` writes into a script
// (exports/repro_main.py, python/trainrepro_worker/zoo.py and ds_worker.py) and what
// `run --engine deepspeed` starts (the same two and deepspeed_engine_worker.py).
#pragma once
#include <vector>

#include "harness/files/embedded_file.h"

namespace trainrepro {

using ExportSource = EmbeddedFile;
const std::vector<ExportSource>& export_source_table();

}  // namespace trainrepro
