#include "harness/cli/run_progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace trainrepro {
namespace {

constexpr auto kPlainLineInterval = std::chrono::seconds(60);

double seconds_between(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

std::string format_duration(double seconds) {
  const int64_t whole = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  if (whole < 60) {
    std::snprintf(text, sizeof text, "%llds", static_cast<long long>(whole));
  } else if (whole < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(whole / 60),
                  static_cast<long long>(whole % 60));
  } else {
    std::snprintf(text, sizeof text, "%lldh%02lldm", static_cast<long long>(whole / 3600),
                  static_cast<long long>(whole % 3600 / 60));
  }
  return text;
}

RunProgress::RunProgress(std::ostream& out, int64_t total, bool live)
    : out_(out),
      total_(total),
      live_(live),
      start_(std::chrono::steady_clock::now()),
      last_plain_line_(start_) {}

bool RunProgress::stderr_is_live_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDERR_FILENO) == 1 && term != nullptr && std::strcmp(term, "dumb") != 0;
}

std::string RunProgress::status(int64_t done) const {
  const double elapsed = seconds_between(start_, std::chrono::steady_clock::now());
  std::string text = format_duration(elapsed) + " elapsed";
  // The mean time of the scenarios so far; no estimate before the first has finished.
  if (done > 0 && done < total_) {
    text += ", about " + format_duration(elapsed / done * (total_ - done)) + " left";
  }
  return text;
}

void RunProgress::starting(int64_t index, const std::string& name) {
  if (live_) {
    out_ << "\r\033[K[" << index + 1 << "/" << total_ << "] running " << name << " · "
         << status(done_) << std::flush;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (done_ > 0 && now - last_plain_line_ >= kPlainLineInterval) {
    last_plain_line_ = now;
    out_ << "progress: " << done_ << " of " << total_ << " scenarios done, " << status(done_)
         << std::endl;
  }
}

void RunProgress::finished() {
  ++done_;
  if (live_) out_ << "\r\033[K" << std::flush;
}

}  // namespace trainrepro
