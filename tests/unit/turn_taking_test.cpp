// The turn protocol of `perf compare`'s rerun, with real processes: a shell script that follows
// it (ready, then one round per turn, then waits for the end) and ones that break it.
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/perf/cpu_pinning.h"
#include "harness/perf/turn_taking.h"

namespace trainrepro {
namespace {

std::string temporary_log(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("trainrepro-turns-") + name + "-" + std::to_string(::getpid()) + ".log"))
      .string();
}

TEST(TurnTaking, AWorkerThatFollowsTheProtocolTakesItsTurnsAndFinishes) {
  // Ready byte on 4; per turn read one byte on 3 and answer on 4; then wait for the end of 3.
  const std::string script =
      "printf r >&4; for i in 1 2 3; do head -c 1 <&3 >/dev/null; echo round $i; printf d >&4; "
      "done; cat <&3 >/dev/null; echo finished";
  const std::string log = temporary_log("good");
  TurnWorker worker({"/bin/sh", "-c", script}, "", log);
  ASSERT_TRUE(worker.wait_until_ready());
  for (int round = 0; round < 3; ++round) EXPECT_TRUE(worker.take_turn()) << round;
  EXPECT_EQ(worker.finish(), "");
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "round 1\nround 2\nround 3\nfinished\n");
  std::filesystem::remove(log);
}

TEST(TurnTaking, AWorkerThatDiesIsSeenAndItsOutputReported) {
  const std::string log = temporary_log("dead");
  TurnWorker worker({"/bin/sh", "-c", "echo cannot measure: no such scenario; exit 2"}, "", log);
  EXPECT_FALSE(worker.wait_until_ready());
  EXPECT_FALSE(worker.take_turn());  // no SIGPIPE: the coordinator survives writing to it
  const std::string problem = worker.finish();
  EXPECT_NE(problem.find("/bin/sh perf run failed (exit code 2):\ncannot measure: no such scenario"),
            std::string::npos)
      << problem;
  std::filesystem::remove(log);
}

TEST(TurnTaking, AWorkerThatStopsMidwayIsSeen) {
  const std::string log = temporary_log("midway");
  TurnWorker worker({"/bin/sh", "-c", "printf r >&4; head -c 1 <&3 >/dev/null; printf d >&4; "
                                      "kill -9 $$"},
                    "", log);
  ASSERT_TRUE(worker.wait_until_ready());
  EXPECT_TRUE(worker.take_turn());
  EXPECT_FALSE(worker.take_turn());
  EXPECT_NE(worker.finish().find("killed by a signal"), std::string::npos);
  std::filesystem::remove(log);
}

TEST(TurnTaking, AWorkerThatHangsIsStoppedAndSaidSo) {
  const std::string log = temporary_log("hung");
  TurnWorker worker({"/bin/sh", "-c", "printf r >&4; echo measuring; sleep 60"}, "", log, 0.5);
  ASSERT_TRUE(worker.wait_until_ready());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(worker.take_turn());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  const std::string problem = worker.finish();
  EXPECT_NE(problem.find("did not finish a round within 0.5 s and was stopped; its output:\n"
                         "measuring"),
            std::string::npos)
      << problem;
  std::filesystem::remove(log);
}

TEST(TurnTaking, AMissingExecutableIsAnErrorThatNamesIt) {
  try {
    TurnWorker worker({"/nonexistent/trainrepro", "perf", "run"}, "", temporary_log("missing"));
    // posix_spawn may report the failure only as the child's exit (127).
    EXPECT_FALSE(worker.wait_until_ready());
    EXPECT_NE(worker.finish().find("/nonexistent/trainrepro"), std::string::npos);
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/trainrepro: cannot start"),
              std::string::npos);
  }
}

TEST(CpuPinning, PinsEveryThreadToTheLastAllowedCpu) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  const int cpu = last_allowed_cpu();
  EXPECT_TRUE(CPU_ISSET(cpu, &before));
  pin_process_to_cpu(cpu);
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_EQ(CPU_COUNT(&after), 1);
  EXPECT_TRUE(CPU_ISSET(cpu, &after));
  EXPECT_THROW(pin_process_to_cpu(-1), std::runtime_error);
  // Restore for the tests that follow in this process.
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
}

// Rank 0 (which times the steps) runs where a one-rank benchmark would; the others spread from
// the highest CPU down, CPU 0 (interrupts) last.
TEST(CpuPinning, RanksStartOnTheMeasuringCpuThenSpreadDownwards) {
  EXPECT_EQ(rank_cpu_order({0, 1, 2, 3}, std::nullopt), (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(rank_cpu_order({0, 1, 2, 3}, 1), (std::vector<int>{1, 3, 2, 0}));
  EXPECT_EQ(rank_cpu_order({0, 1}, 1), (std::vector<int>{1, 0}));
  EXPECT_EQ(rank_cpu_order({4}, std::nullopt), (std::vector<int>{4}));
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  EXPECT_EQ(allowed.back(), last_allowed_cpu());
}

}  // namespace
}  // namespace trainrepro
