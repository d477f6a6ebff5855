// The performance history page: for every benchmark, each judged figure drawn over the commits
// of a machine's history (the median and the range of its repetitions), with the change points
// marked where a level shift is significant and at least the minimum effect. One self-contained
// HTML file, charts as inline SVG: it opens from a CI artifact store without a server.
#pragma once
#include <string>
#include <vector>

#include "harness/perf/perf_history.h"

namespace trainrepro {

std::string perf_history_page(const PerfHistoryInput& input);

}  // namespace trainrepro
