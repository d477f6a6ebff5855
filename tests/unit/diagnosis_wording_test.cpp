// The one table of diagnosis wording: a scenario's run and a watched window read the same
// sentence for the same mistake; what only a watch measures (the norm ratio, the loop's calls)
// is added to it, never a second wording.
#include <gtest/gtest.h>

#include <string>

#include "harness/verdict/diagnosis_wording.h"

namespace trainrepro {
namespace {

DiagnosisFacts scenario_facts() {
  DiagnosisFacts facts;
  facts.window_steps = 4;
  facts.batch = {32, 8, 4, 1, {}};
  facts.effective_batch = 32;
  facts.intended_batch = 32;
  return facts;
}

DiagnosisFacts watched_facts() {
  DiagnosisFacts facts = scenario_facts();
  facts.norm_ratio = 0.25;
  facts.window_micro_steps = 4;
  facts.items = 16;
  facts.calls = WindowCalls{};
  return facts;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DiagnosisWording, ScenarioAndWatchedWindowShareTheSentence) {
  const std::string scenario =
      explain_diagnosis(DiagnosisKind::loss_scaled_twice, scenario_facts());
  const std::string watched = explain_diagnosis(DiagnosisKind::loss_scaled_twice, watched_facts());
  EXPECT_EQ(scenario,
            "gradients are 1/4 of the golden's: the loss is divided by gradient_accumulation_steps "
            "twice, by the training loop and by engine.backward. Fix: remove the loop's own "
            "division; engine.backward already scales");
  EXPECT_EQ(watched,
            "gradients are 1/4 of the golden's (norm ratio 0.25): the loss is divided by "
            "gradient_accumulation_steps twice, by the training loop and by engine.backward. Fix: "
            "remove the loop's own division; engine.backward already scales");
}

TEST(DiagnosisWording, WatchedCallsSaidWhereSeen) {
  DiagnosisFacts facts = watched_facts();
  facts.calls->zero_grad_calls = "optimizer.zero_grad()";
  const std::string zeroed = explain_diagnosis(DiagnosisKind::zeroed_inside_window, facts);
  EXPECT_TRUE(contains(zeroed, "(the loop calls optimizer.zero_grad() every micro-step)"))
      << zeroed;
  EXPECT_TRUE(contains(zeroed, "so 3 of 4 micro-batches are lost")) << zeroed;
  EXPECT_FALSE(contains(explain_diagnosis(DiagnosisKind::zeroed_inside_window, scenario_facts()),
                        "the loop calls"));
}

TEST(DiagnosisWording, LossNotScaledNamesTheCauseTheWatchSaw) {
  EXPECT_TRUE(contains(explain_diagnosis(DiagnosisKind::loss_not_scaled, scenario_facts()),
                       "Fix: call engine.backward(loss)"));
  DiagnosisFacts trainer = watched_facts();
  trainer.calls->scale_wrt_gas_off = true;
  EXPECT_TRUE(contains(explain_diagnosis(DiagnosisKind::loss_not_scaled, trainer),
                       "the loop passed scale_wrt_gas=False"));
  DiagnosisFacts through_engine = watched_facts();  // no loss.backward() seen
  EXPECT_TRUE(contains(explain_diagnosis(DiagnosisKind::loss_not_scaled, through_engine),
                       "Fix: let engine.backward(loss) divide"));
}

TEST(DiagnosisWording, VariantAddendumFollowsTheSentence) {
  DiagnosisFacts facts = watched_facts();
  facts.addendum = ". Worse, the ranks never average their gradients";
  const std::string text = explain_diagnosis(DiagnosisKind::optimizer_every_micro_step, facts);
  EXPECT_EQ(text.rfind(facts.addendum), text.size() - facts.addendum.size()) << text;
}

TEST(DiagnosisWording, KindsWordedByTheirOwnJudgesAreEmpty) {
  EXPECT_EQ(explain_diagnosis(DiagnosisKind::tensor_memory_leak, watched_facts()), "");
  EXPECT_EQ(explain_diagnosis(DiagnosisKind::low_precision_accumulation, watched_facts()), "");
}

TEST(DiagnosisWording, UnexplainedMismatchListsWhatWasTested) {
  const std::string text = explain_unexplained_mismatch(
      2, {{DiagnosisKind::loss_scaled_twice, 0.5}}, /*norm_ratio=*/0.9, /*cosine=*/0.99);
  EXPECT_EQ(text,
            "gradients differ from the golden at step 2 (norm ratio 0.9, cosine 0.990000) and no "
            "known cause explains it; tested: loss_scaled_twice (relative error 0.5)");
}

}  // namespace
}  // namespace trainrepro
