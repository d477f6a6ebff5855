#include "harness/report/perf_history_page.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "harness/perf/mann_whitney.h"

namespace trainrepro {
namespace {

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// One chart: x the runs in order, y the median with a bar from min to max; change points red.
std::string chart(const FigureHistory& series, const std::vector<PerfRun>& runs) {
  std::vector<size_t> present;
  std::vector<std::vector<double>> history;
  for (size_t i = 0; i < series.values.size(); ++i) {
    if (series.values[i] && std::all_of(series.values[i]->begin(), series.values[i]->end(),
                                        [](double v) { return v > 0.0; })) {
      present.push_back(i);
      history.push_back(*series.values[i]);
    }
  }
  if (present.empty()) return "";
  double low = 1e300;
  double high = -1e300;
  for (const auto& values : history) {
    low = std::min(low, *std::min_element(values.begin(), values.end()));
    high = std::max(high, *std::max_element(values.begin(), values.end()));
  }
  if (high <= low) high = low * 1.01 + 1e-12;
  const double pad = (high - low) * 0.1;
  low = std::max(0.0, low - pad);  // every figure is positive: no negative axis
  high += pad;
  const double width = 720;
  const double height = 180;
  const double left = 70;
  const double right = 20;
  const double top = 10;
  const double bottom = 30;
  const size_t count = runs.size();
  auto x_of = [&](size_t i) {
    return left + (count > 1 ? (width - left - right) * static_cast<double>(i) /
                                   static_cast<double>(count - 1)
                             : (width - left - right) / 2);
  };
  auto y_of = [&](double v) { return top + (height - top - bottom) * (high - v) / (high - low); };
  std::ostringstream svg;
  svg << "<figure><figcaption>" << escaped(series.title) << "</figcaption><svg width=\"" << width
      << "\" height=\"" << height << "\" role=\"img\">";
  svg << "<text x=\"4\" y=\"" << top + 10 << "\" class=\"axis\">" << number(high) << "</text>";
  svg << "<text x=\"4\" y=\"" << height - bottom << "\" class=\"axis\">" << number(low)
      << "</text>";
  std::string path;
  for (size_t k = 0; k < present.size(); ++k) {
    const size_t i = present[k];
    const auto& values = history[k];
    const double x = x_of(i);
    const double median = median_of(values);
    svg << "<line class=\"range\" x1=\"" << x << "\" x2=\"" << x << "\" y1=\""
        << y_of(*std::min_element(values.begin(), values.end())) << "\" y2=\""
        << y_of(*std::max_element(values.begin(), values.end())) << "\"/>";
    path += (path.empty() ? "M" : " L") + number(x) + "," + number(y_of(median));
    svg << "<circle cx=\"" << x << "\" cy=\"" << y_of(median) << "\" r=\"3\"><title>"
        << escaped(runs[i].context.commit) << " " << escaped(runs[i].context.date)
        << ": median " << number(median) << "</title></circle>";
    svg << "<text class=\"axis\" x=\"" << x - 20 << "\" y=\"" << height - 8 << "\">"
        << escaped(runs[i].context.commit.substr(0, 7)) << "</text>";
  }
  svg << "<path class=\"median\" d=\"" << path << "\"/>";
  for (const ChangePoint& change : series.change_points) {
    const double x = x_of(change.index);
    svg << "<line class=\"change\" x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << top
        << "\" y2=\"" << height - bottom << "\"/><text class=\"change\" x=\"" << x + 4
        << "\" y=\"" << top + 12 << "\">x" << number(change.ratio) << " (p "
        << number(change.p_value) << ")</text>";
  }
  svg << "</svg></figure>";
  return svg.str();
}

}  // namespace

std::string perf_history_page(const PerfHistoryInput& input) {
  const std::vector<BenchmarkHistory> histories = benchmark_histories(input);
  std::ostringstream page;
  page << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>trainrepro "
          "performance history</title><style>"
          "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
          "h2{font-size:1.1em;margin-top:2em}figure{margin:0.5em 0}"
          "figcaption{font-size:0.9em;color:#555}svg{background:#fafafa;border:1px solid #ddd}"
          ".median{fill:none;stroke:#2563eb;stroke-width:1.5}.range{stroke:#93c5fd;stroke-width:3}"
          "circle{fill:#2563eb}line.change{stroke:#dc2626;stroke-dasharray:4 3}"
          "text.change{fill:#dc2626;font-size:11px}.axis{font-size:10px;fill:#666}td,th{padding:2px 8px;text-align:left}"
          ".unreadable{color:#b91c1c}</style></head><body>";
  page << "<h1>Performance history</h1><p>" << input.runs.size() << " runs, " << histories.size()
       << " benchmarks. Each point is the median of a run's repetitions, the bar their range. A "
          "red line marks a change point: the level shifts with Mann–Whitney p &lt; "
       << number(input.alpha) << " and by at least " << number(input.min_effect * 100.0)
       << " %.</p><table><tr><th>#</th><th>commit</th><th>date</th><th>machine</th>"
          "<th>file</th></tr>";
  for (size_t i = 0; i < input.runs.size(); ++i) {
    const PerfContext& context = input.runs[i].context;
    page << "<tr><td>" << i + 1 << "</td><td>" << escaped(context.commit) << "</td><td>"
         << escaped(context.date) << "</td><td>" << escaped(context.machine) << "</td><td>"
         << escaped(i < input.files.size() ? input.files[i] : "") << "</td></tr>";
  }
  page << "</table>";
  for (const std::string& problem : input.unreadable) {
    page << "<p class=\"unreadable\">not read: " << escaped(problem) << "</p>";
  }
  for (const BenchmarkHistory& history : histories) {
    page << "<h2>" << escaped(history.name) << "</h2>";
    for (const FigureHistory& figure : history.figures) page << chart(figure, input.runs);
  }
  page << "</body></html>\n";
  return page.str();
}

}  // namespace trainrepro
