// `watch --html FILE`: a watched run as one self-contained HTML page (the report's stylesheet
// inlined, no script, no network): the verdict, the diagnosis with its fix, every judged step
// against the golden with the hypotheses tested, the memory verdict, the command's problem.
#pragma once
#include <string>

#include "harness/report/watch_report.h"

namespace trainrepro {

std::string watch_html_page(const WatchReport& report);

}  // namespace trainrepro
