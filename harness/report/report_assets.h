// The HTML report's template and assets (reports/template.html, report.css, charts.js,
// report.js), compiled into the binary: a report needs no file beside the binary, and the page
// it writes needs no network.
#pragma once
#include <vector>

#include "harness/files/embedded_file.h"

namespace trainrepro {

using ReportAsset = EmbeddedFile;
const std::vector<ReportAsset>& report_asset_table();

}  // namespace trainrepro
