// A watched run as a scenario's result: the same outcome and exit code as the watch says, its
// judged steps and diagnosis where a scenario's are, and a results file that `trainrepro report`
// reads back.
#include <gtest/gtest.h>

#include "harness/report/html_report.h"
#include "harness/report/junit_reporter.h"
#include "harness/report/results_json.h"
#include "harness/report/watched_result.h"

namespace trainrepro {
namespace {

WatchReport failed_watch() {
  WatchReport report;
  report.command = {"torchrun", "--nproc_per_node", "1", "scripts/loss-scaled-twice.py"};
  report.outcome = "failed";
  report.exit_code = kExitExpectationNotMet;
  report.versions = {"0.19.8", "2.11.0", "3.11.7"};
  report.ranks = 1;
  report.windows_wanted = 2;
  WatchJudgement& judged = report.judgement;
  judged.judged = true;
  for (int64_t w = 0; w < 2; ++w) {
    WatchedWindowJudgement window;
    window.window = w;
    window.micro_steps = 4;
    window.gradients_match = false;
    window.norm_ratio = 0.25;
    window.gradients.push_back(TensorComparison{});
    window.gradients.back().name = "layer.weight";
    window.tested = {{DiagnosisKind::loss_scaled_twice, 1e-7}};
    judged.windows.push_back(window);
  }
  judged.diagnosis = DiagnosisKind::loss_scaled_twice;
  judged.explanation = "gradients are 1/4 of the golden's (norm ratio 0.25): …";
  judged.memory.not_judged_reason = "memory not watched (--memory-steps 0)";
  return report;
}

TEST(WatchedResult, FailedWatchIsAFailedScenarioResultWithItsDiagnosis) {
  const ScenarioResult result = scenario_result_of(failed_watch());
  EXPECT_EQ(result.file, "scripts/loss-scaled-twice.py");
  EXPECT_EQ(result.name, "loss-scaled-twice.py");
  EXPECT_EQ(result.verdict.outcome, Outcome::failed);
  EXPECT_EQ(exit_code_of(result.verdict), kExitExpectationNotMet);
  EXPECT_EQ(result.verdict.found, "diagnosis loss_scaled_twice");
  ASSERT_TRUE(result.training.has_value());
  ASSERT_EQ(result.training->steps.size(), 2u);
  EXPECT_EQ(result.training->first_gradient_mismatch, 0);
  ASSERT_TRUE(result.training->diagnosis.has_value());
  EXPECT_EQ(result.training->diagnosis->kind, DiagnosisKind::loss_scaled_twice);
  EXPECT_EQ(result.training->diagnosis->tested.size(), 1u);
  ASSERT_TRUE(result.memory.has_value());
}

TEST(WatchedResult, NotJudgedIsAnInfrastructureErrorExitingThree) {
  WatchReport report = failed_watch();
  report.outcome = "not-judged";
  report.exit_code = kExitInfrastructure;
  report.judgement = WatchJudgement{};
  report.judgement.not_judged_reason = "the golden could not be computed on rank 0: why";
  const ScenarioResult result = scenario_result_of(report);
  EXPECT_EQ(result.verdict.outcome, Outcome::error);
  EXPECT_EQ(exit_code_of(result.verdict), kExitInfrastructure);
  EXPECT_NE(result.verdict.found.find("the golden could not be computed"), std::string::npos);
}

TEST(WatchedResult, ResultsFileReadsBackForTheReport) {
  const ScenarioResult written = scenario_result_of(failed_watch());
  RunProvenance provenance;
  provenance.started_at = "2026-12-06T07:00:00Z";
  nlohmann::json json = result_to_json(written, provenance);
  json["watch"] = {{"format", "trainrepro-watch-results"}};  // what only a watch knows
  const ScenarioResult read = result_from_json(json, "watch.json");
  EXPECT_EQ(read.verdict.outcome, Outcome::failed);
  EXPECT_EQ(read.verdict.diagnosis, written.verdict.diagnosis);
  ASSERT_TRUE(read.training.has_value());
  EXPECT_EQ(read.training->steps.size(), 2u);
  ReportInput input;
  input.results = {read};
  input.provenances = {provenance};
  EXPECT_NE(html_report(input).find("loss-scaled-twice.py"), std::string::npos);
  const std::string xml = junit_xml({written}, provenance, 1.0);
  EXPECT_NE(xml.find("<failure type=\"failed\""), std::string::npos) << xml;
}

}  // namespace
}  // namespace trainrepro
