// A watched run as a scenario's result: the same outcome and exit code as the watch says, its
// judged steps and diagnosis where a scenario's are, and a results file that `trainrepro report`
// reads back.
#include <gtest/gtest.h>

#include <sstream>

#include "harness/pipeline/watched_result.h"
#include "harness/report/console_reporter.h"
#include "harness/report/html_report.h"
#include "harness/report/junit_reporter.h"
#include "harness/report/results_json.h"

namespace trainrepro {
namespace {

// A run whose loop divided its loss by the accumulation steps itself: two windows, both a
// quarter of the golden, explained as loss_scaled_twice.
WatchedRun failed_run(TrainingJudgement& training, MemoryJudgement& memory) {
  WatchedRun run;
  run.command = {"torchrun", "--nproc_per_node", "1", "scripts/loss-scaled-twice.py"};
  run.ranks = 1;
  run.steps_wanted = 2;
  WatchedJudgement& judged = run.judgement;
  judged.judged = true;
  for (int64_t w = 0; w < 2; ++w) {
    StepJudgement window;
    window.step = w;
    window.micro_batches = 4;
    window.gradients_match = false;
    window.norm_ratio = 0.25;
    window.gradients.push_back(TensorComparison{});
    window.gradients.back().name = "layer.weight";
    window.tested = {{DiagnosisKind::loss_scaled_twice, 1e-7}};
    training.steps.push_back(window);
  }
  training.first_gradient_mismatch = 0;
  training.diagnosis =
      Diagnosis{DiagnosisKind::loss_scaled_twice, "…", 0, training.steps[0].tested};
  judged.diagnosis = DiagnosisKind::loss_scaled_twice;
  judged.explanation = "gradients are 1/4 of the golden's (norm ratio 0.25): …";
  memory.not_judged_reason = "memory not watched (--memory-steps 0)";
  return run;
}

const WorkerVersions kVersions{"0.19.8", "2.11.0", "3.11.7"};

ScenarioResult failed_watch() {
  TrainingJudgement training;
  MemoryJudgement memory;
  WatchedRun run = failed_run(training, memory);
  return watched_result(std::move(run), std::move(training), std::move(memory), kVersions, 1.0);
}

TEST(WatchedResult, FailedWatchIsAFailedScenarioResultWithItsDiagnosis) {
  const ScenarioResult result = failed_watch();
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
  TrainingJudgement training;
  MemoryJudgement memory;
  WatchedRun run = failed_run(training, memory);
  run.judgement = WatchedJudgement{};
  run.judgement.not_judged_reason = "the golden could not be computed on rank 0: why";
  const ScenarioResult result =
      watched_result(std::move(run), TrainingJudgement{}, std::move(memory), kVersions, 1.0);
  EXPECT_EQ(watched_outcome(result), "not-judged");
  EXPECT_EQ(result.verdict.outcome, Outcome::error);
  EXPECT_EQ(exit_code_of(result.verdict), kExitInfrastructure);
  EXPECT_NE(result.verdict.found.find("the golden could not be computed"), std::string::npos);
}

TEST(WatchedResult, ResultsFileReadsBackForTheReport) {
  const ScenarioResult written = failed_watch();
  RunProvenance provenance;
  provenance.started_at = "2026-12-06T07:00:00Z";
  const nlohmann::json json = result_to_json(written, provenance);
  // What only a watch knows is the results file's "watch" object.
  ASSERT_TRUE(json.contains("watch"));
  EXPECT_EQ(json["watch"]["outcome"], "failed");
  EXPECT_EQ(json["watch"]["exit_code"], kExitExpectationNotMet);
  EXPECT_EQ(json["watch"]["diagnosis"], "loss_scaled_twice");
  EXPECT_EQ(json["watch"]["steps"].size(), 2u);
  EXPECT_EQ(json["watch"]["steps"][0]["hypotheses"][0]["hypothesis"], "loss_scaled_twice");
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

TEST(WatchedResult, TheConsoleReporterWritesAWatchedRunInWatchsLines) {
  std::ostringstream out;
  ConsoleReporter(out).report_scenario(failed_watch());
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("failed         watch: torchrun --nproc_per_node 1 "
                       "scripts/loss-scaled-twice.py (2 of 2 optimizer steps judged on 1 rank, "
                       "deepspeed 0.19.8",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("    diagnosis: loss_scaled_twice: gradients are 1/4"), std::string::npos)
      << text;
  EXPECT_NE(text.find("    step 1: 4 micro-steps x 1 rank, 0 items; against the golden: norm "
                      "ratio 0.25"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    memory not watched (--memory-steps 0)"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainrepro
