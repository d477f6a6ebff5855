// The Python sources `trainrepro export --python` writes into a script (exports/repro_main.py,
// and python/trainrepro_worker/zoo.py, loop_pieces.py and ds_worker.py), compiled in.
#pragma once
#include <vector>

#include "harness/files/embedded_file.h"

namespace trainrepro {

using ExportSource = EmbeddedFile;
const std::vector<ExportSource>& export_source_table();

}  // namespace trainrepro
