// The releases refused before any install (harness/worker/unrunnable_releases.h): each span by
// its ends and by the torch release from which it cannot run.
#include <gtest/gtest.h>

#include <string>

#include "harness/worker/unrunnable_releases.h"

namespace trainrepro {
namespace {

TEST(UnrunnableReleases, ReleasesThatNeedIntelsExtensionAreRefusedOverTorch211) {
  const auto reason = why_release_cannot_run("0.14.0", "2.11.0");
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("DeepSpeed 0.14.0 cannot run over torch 2.11.0"), std::string::npos);
  EXPECT_NE(reason->find("intel_extension_for_pytorch"), std::string::npos) << *reason;
  EXPECT_FALSE(why_release_cannot_run("0.14.0", "2.8.0"));  // that extension has a build there
}

TEST(UnrunnableReleases, ReleasesImportingARemovedTorchApiAreRefusedFromThatTorchOn) {
  for (const char* release : {"0.14.1", "0.14.2", "0.14.3"}) {
    const auto reason = why_release_cannot_run(release, "2.11.0");
    ASSERT_TRUE(reason) << release;
    EXPECT_NE(reason->find("_get_socket_with_port"), std::string::npos) << *reason;
    EXPECT_FALSE(why_release_cannot_run(release, "2.3.1")) << release;
    EXPECT_TRUE(why_release_cannot_run(release, "2.4.0")) << release;
  }
}

TEST(UnrunnableReleases, ReleasesThatRanInTheSweepAreNotRefused) {
  for (const char* release : {"0.14.4", "0.14.5", "0.15.0", "0.17.5", "0.19.8"}) {
    EXPECT_FALSE(why_release_cannot_run(release, "2.11.0")) << release;
  }
}

}  // namespace
}  // namespace trainrepro
