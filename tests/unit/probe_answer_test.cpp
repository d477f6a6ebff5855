// What a worker Python's probe answered (harness/worker/probe_answer.h): the versions from its
// answer file whatever it printed, and a reason that is never empty when it cannot serve.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "harness/worker/deepspeed_worker.h"
#include "harness/worker/probe_answer.h"

namespace trainrepro {
namespace {

// DeepSpeed 0.17.5 logs this on stdout when imported.
constexpr const char* kInfoLine =
    "[2026-12-06 06:20:12,343] [INFO] [real_accelerator.py:260:get_accelerator] Setting "
    "ds_accelerator to cpu (override)\n";

RankLaunch ended(int exit_code, std::string output, int killed_by = 0, bool timed_out = false) {
  RankLaunch launch;
  launch.exit_code = exit_code;
  launch.killed_by = killed_by;
  launch.timed_out = timed_out;
  launch.output = std::move(output);
  return launch;
}

std::string reason_for(const std::optional<std::string>& answer, const RankLaunch& launch) {
  try {
    read_probe_answer(answer, launch, "--engine deepspeed==0.17.5", "deepspeed==0.17.5 in HOME",
                      "deepspeed", 600);
  } catch (const DeepSpeedPythonError& error) {
    return error.what();
  }
  return "";
}

TEST(ProbeAnswer, VersionsComeFromTheAnswerFileWhateverTheImportLogged) {
  const std::string output =
      std::string(kInfoLine) + "TRAINREPRO-VERSIONS {\"deepspeed\": \"0.0.0\"}\nSome other words\n";
  const WorkerVersions versions = read_probe_answer(
      R"({"engine": "deepspeed", "deepspeed": "0.17.5", "torch": "2.11.0", "python": "3.11.7"})",
      ended(0, output), "--engine deepspeed", "python3", "deepspeed", 600);
  EXPECT_EQ(versions.deepspeed, "0.17.5");
  EXPECT_EQ(versions.torch, "2.11.0");
  EXPECT_EQ(versions.python, "3.11.7");
  EXPECT_EQ(versions.engine, "deepspeed");
}

TEST(ProbeAnswer, AMissingModuleIsNamedWithItsExceptionsLastLine) {
  const std::string reason = reason_for(
      R"({"missing": "deepspeed", "error": "ImportError: cannot import name 'x' from 'torch'"})",
      ended(3, kInfoLine));
  EXPECT_EQ(reason,
            "--engine deepspeed==0.17.5: deepspeed==0.17.5 in HOME has no deepspeed (ImportError: "
            "cannot import name 'x' from 'torch'); install it into that Python, or name one that "
            "has it");
}

TEST(ProbeAnswer, NoAnswerAndNoOutputStillSaysHowItEnded) {
  EXPECT_EQ(reason_for(std::nullopt, ended(139, "", /*killed_by=*/11)),
            "--engine deepspeed==0.17.5: deepspeed==0.17.5 in HOME was killed by signal 11 before "
            "answering when asked for its torch and deepspeed, and printed nothing");
  EXPECT_EQ(reason_for(std::nullopt, ended(0, "")),
            "--engine deepspeed==0.17.5: deepspeed==0.17.5 in HOME exited with code 0 without "
            "answering when asked for its torch and deepspeed, and printed nothing");
}

TEST(ProbeAnswer, NoAnswerShowsTheTailOfTheOutput) {
  const std::string reason =
      reason_for(std::nullopt, ended(1, std::string(kInfoLine) + "Fatal Python error: Aborted\n"));
  EXPECT_NE(reason.find("exited with code 1 without answering"), std::string::npos) << reason;
  EXPECT_NE(reason.find("its output ended with:\n"), std::string::npos) << reason;
  EXPECT_NE(reason.find("Fatal Python error: Aborted"), std::string::npos) << reason;
}

TEST(ProbeAnswer, ATimeoutNamesTheLimit) {
  EXPECT_NE(reason_for(std::nullopt, ended(137, kInfoLine, 9, /*timed_out=*/true))
                .find("did not answer within 600 s (--rank-timeout)"),
            std::string::npos);
}

TEST(ProbeAnswer, AnAnswerWithoutVersionsOrNotJsonIsRefused) {
  EXPECT_NE(reason_for(R"({"engine": "deepspeed", "torch": "2.11.0"})", ended(0, ""))
                .find("answered without the versions"),
            std::string::npos);
  EXPECT_NE(reason_for("{\"engine\": \"deeps", ended(0, "")).find("answered \""),
            std::string::npos);
  EXPECT_NE(reason_for(R"({"missing": "torch"})", ended(3, "")).find("has no torch (no reason"),
            std::string::npos);
}

}  // namespace
}  // namespace trainrepro
