// Progress of a long run: on a terminal, one status line rewritten in place ("[12/156] running
// gas-missing · 1m03s elapsed · about 4m10s left"); piped into a CI log, a plain line at most
// once a minute. Written to stderr, so stdout stays the scenario lines alone.
#pragma once
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace trainrepro {

class RunProgress {
 public:
  // `live`: stderr is a terminal that understands "erase line".
  RunProgress(std::ostream& out, int64_t total, bool live);
  void starting(int64_t index, const std::string& name);  // index from 0
  void finished();  // before the scenario's own lines are printed

  // True when stderr is a terminal that is not "dumb".
  static bool stderr_is_live_terminal();

 private:
  std::string status(int64_t done) const;

  std::ostream& out_;
  int64_t total_;
  bool live_;
  int64_t done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_plain_line_;
};

// "4m10s", "52s", "1h02m".
std::string format_duration(double seconds);

}  // namespace trainrepro
