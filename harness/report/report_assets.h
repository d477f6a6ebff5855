// The HTML report's template and assets (reports/template.html, report.css, charts.js,
// report.js), compiled into the binary by cmake/embed_files.cmake: a report needs no file
// beside the binary, and the page it writes needs no network.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace trainrepro {

struct ReportAsset {
  const char* name;  // "report.js"
  const unsigned char* bytes;
  size_t size;
};

const std::vector<ReportAsset>& report_asset_table();

}  // namespace trainrepro
