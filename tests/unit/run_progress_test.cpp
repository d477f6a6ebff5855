// The run's progress: a status line rewritten in place on a terminal, erased before each
// scenario's own lines; nothing extra for a short piped run.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/cli/run_progress.h"

namespace trainrepro {
namespace {

TEST(RunProgress, DurationsReadAsPeopleSayThem) {
  EXPECT_EQ(format_duration(0.2), "0s");
  EXPECT_EQ(format_duration(52), "52s");
  EXPECT_EQ(format_duration(250), "4m10s");
  EXPECT_EQ(format_duration(3720), "1h02m");
}

TEST(RunProgress, OnATerminalShowsWhichScenarioOfHowManyAndErasesItself) {
  std::ostringstream out;
  RunProgress progress(out, 3, /*live=*/true);
  progress.starting(0, "gas-missing");
  EXPECT_NE(out.str().find("[1/3] running gas-missing"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("left"), std::string::npos) << "no estimate before one has finished";
  progress.finished();
  EXPECT_EQ(out.str().substr(out.str().size() - 4), "\r\033[K");
  progress.starting(1, "gas-set");
  EXPECT_NE(out.str().find("[2/3] running gas-set"), std::string::npos);
  EXPECT_NE(out.str().find("left"), std::string::npos) << out.str();
}

TEST(RunProgress, PipedItAddsNothingToAShortRun) {
  std::ostringstream out;
  RunProgress progress(out, 2, /*live=*/false);
  progress.starting(0, "a");
  progress.finished();
  progress.starting(1, "b");
  progress.finished();
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace trainrepro
