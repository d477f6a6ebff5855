// end_descendants reaches what a process group does not: a grandchild in a session of its own,
// re-parented to this process (the subreaper) when its parent dies, and processes that ignore
// SIGTERM.
#include "harness/distributed/process_tree.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace trainrepro {
namespace {

// Polls until at least `count` descendants are alive; false if none came within 30 s.
bool wait_for_descendants(size_t count) {
  for (int i = 0; i < 1500; ++i) {
    if (live_descendants().size() >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(ProcessTree, EndsDescendantsInSessionsOfTheirOwnThatIgnoreSigterm) {
  ASSERT_TRUE(become_child_subreaper());
  const pid_t shell = ::fork();
  ASSERT_GE(shell, 0);
  if (shell == 0) {
    ::signal(SIGTERM, SIG_IGN);  // inherited through exec: nothing below ends on SIGTERM
    ::execl("/bin/sh", "sh", "-c", "setsid sleep 300 & exec sleep 300", nullptr);
    ::_exit(127);
  }
  ASSERT_TRUE(wait_for_descendants(2));
  // The shell's own process gone first: its setsid'd child is now this process's.
  ::kill(shell, SIGKILL);
  ::waitpid(shell, nullptr, 0);
  ASSERT_TRUE(wait_for_descendants(1));
  end_descendants(std::chrono::milliseconds(100));
  EXPECT_TRUE(live_descendants().empty());
  stop_being_child_subreaper();
}

TEST(ProcessTree, ReapsTheDirectChildAndReturnsItsStatus) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sleep", "sleep", "300", nullptr);
    ::_exit(127);
  }
  ASSERT_TRUE(wait_for_descendants(1));
  const std::map<pid_t, int> reaped = end_descendants(std::chrono::seconds(10));
  ASSERT_EQ(reaped.count(child), 1u);
  EXPECT_TRUE(WIFSIGNALED(reaped.at(child)));
  EXPECT_EQ(WTERMSIG(reaped.at(child)), SIGTERM);  // polite first: sleep ends on SIGTERM
}

}  // namespace
}  // namespace trainrepro
