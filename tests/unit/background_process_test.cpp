// A background process (the worker sets of `run --engine deepspeed`) outlives the blocking launches
// that run meanwhile, and ends with its whole tree when asked: what lets one set of ranks serve
// scenario after scenario without a probe or another launch killing it.
#include "harness/distributed/background_process.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "harness/distributed/process_tree.h"
#include "harness/distributed/rank_launcher.h"
#include "harness/distributed/rank_work_folder.h"

namespace trainrepro {
namespace {

bool still_alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// Polls until `pid` has at least one child; false if none came within 30 s.
bool wait_for_first_child_of(pid_t pid) {
  const std::string children =
      "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
  for (int i = 0; i < 1500; ++i) {
    std::ifstream in(children);
    pid_t child = 0;
    if (in >> child && child > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(BackgroundProcess, BlockingLaunchThatEndsMeanwhileLeavesItRunning) {
  const std::string folder = create_rank_work_folder();
  {
    BackgroundProcess kept({"/bin/sh", "-c", "sleep 300 & wait"}, folder + "/kept.txt");
    ASSERT_TRUE(wait_for_first_child_of(kept.pid()));
    // A blocking launch ends every descendant it finds when its command ends.
    const RankLaunch launch = launch_process_group({"/bin/true"}, 30, folder + "/out.txt");
    EXPECT_EQ(launch.exit_code, 0);
    EXPECT_TRUE(kept.running());
    EXPECT_TRUE(still_alive(kept.pid()));
    kept.end(std::chrono::milliseconds(100));
    EXPECT_FALSE(kept.running());
    EXPECT_EQ(kept.exit_code(), 128 + SIGTERM);
  }
  EXPECT_TRUE(live_descendants().empty());  // the shell's sleep went with it
  std::filesystem::remove_all(folder);
}

TEST(BackgroundProcess, WaitUntilSaysTheCommandEndedAndItsExitCode) {
  const std::string folder = create_rank_work_folder();
  BackgroundProcess quick({"/bin/sh", "-c", "exit 3"}, folder + "/quick.txt");
  const WaitEnd end = quick.wait_until([] { return false; },
                                       std::chrono::steady_clock::now() + std::chrono::seconds(30));
  EXPECT_EQ(end, WaitEnd::ended);
  EXPECT_EQ(quick.exit_code(), 3);
  std::filesystem::remove_all(folder);
}

TEST(BackgroundProcess, WaitUntilTimesOutWhileTheCommandRuns) {
  const std::string folder = create_rank_work_folder();
  BackgroundProcess slow({"/bin/sleep", "300"}, folder + "/slow.txt");
  const WaitEnd end = slow.wait_until(
      [] { return false; }, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  EXPECT_EQ(end, WaitEnd::timed_out);
  EXPECT_TRUE(slow.running());
  slow.end(std::chrono::milliseconds(100));
  EXPECT_FALSE(still_alive(slow.pid()));
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace trainrepro
