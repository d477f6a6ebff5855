// The watch module compiled in (python/trainrepro_watch: sitecustomize.py, trainrepro_watch.py
// and its trainrepro_watch_*.py parts; python/trainrepro_worker/memory_census.py),
// written into the watched command's private folder, so the binary needs no checkout beside it.
#pragma once
#include <vector>

#include "harness/files/embedded_file.h"

namespace trainrepro {

const std::vector<EmbeddedFile>& watch_source_table();

}  // namespace trainrepro
