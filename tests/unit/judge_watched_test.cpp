// The watch's judge on recordings built here from real float64 gradients (no DeepSpeed needed):
// the golden and each hypothesis are the sums judge_watched.cpp forms from the micro-batches'
// summed-loss gradients; a run that equals one of them is named, one that equals none is
// unexplained, and a bad recording file is an error naming the file and the JSON pointer.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/scenario/precision_config.h"
#include "harness/verdict/judge_watched.h"
#include "harness/watch/watch_recording.h"

namespace trainrepro {
namespace {

// What the judge gives a watched run, in one value for the tests: what only a watch holds, the
// windows as the training's steps, and rank 0's memory.
struct Judged : WatchedJudgement {
  TrainingJudgement training;
  MemoryJudgement memory;
};

Judged judged_watch(const std::vector<RankRecording>& ranks, std::optional<int64_t> intended) {
  Judged judged;
  static_cast<WatchedJudgement&>(judged) =
      judge_watched(ranks, intended, judged.training, judged.memory);
  return judged;
}

// One rank of a watched run: GAS micro-steps of `items` each, gradients from a seeded generator,
// its run gradient what DeepSpeed makes of a loop whose loss per micro-batch is
// mean * loop_factor (engine.backward dividing by GAS).
std::vector<RankRecording> recorded(int64_t ranks, int64_t gas, double loop_factor,
                                    std::vector<int64_t> items = {4, 4, 4, 4}) {
  at::manual_seed(3);
  std::vector<RankRecording> result;
  std::vector<at::Tensor> averaged = {at::zeros({3, 2}, at::kDouble), at::zeros({2}, at::kDouble)};
  for (int64_t r = 0; r < ranks; ++r) {
    RankRecording rank;
    rank.rank = r;
    rank.world_size = ranks;
    rank.parameter_names = {"layer.weight", "layer.bias"};
    rank.resolved = {ranks * gas * 4, 4, gas, 0.0, 0, "float32"};
    rank.config = {{"train_micro_batch_size_per_gpu", 4}, {"gradient_accumulation_steps", gas}};
    WatchedWindow window;
    window.closed_by = "engine.step()";
    for (int64_t i = 0; i < gas; ++i) {
      WatchedMicroStep micro;
      micro.has_loss = true;
      micro.items = items[static_cast<size_t>(i)];
      micro.summed_loss_gradients = {at::randn({3, 2}, at::kDouble), at::randn({2}, at::kDouble)};
      for (size_t p = 0; p < 2; ++p) {
        averaged[p] = averaged[p] + micro.summed_loss_gradients[p] / micro.items * loop_factor /
                                        static_cast<double>(gas * ranks);
      }
      window.micro_steps.push_back(micro);
      rank.calls.insert(rank.calls.end(), {"forward", "engine.backward()", "engine.step()"});
    }
    window.calls_at_close = static_cast<int64_t>(rank.calls.size());
    rank.windows.push_back(window);
    result.push_back(rank);
  }
  for (RankRecording& rank : result) rank.windows[0].run_gradients = averaged;
  return result;
}

TEST(JudgeWatched, ACorrectLoopPassesOnOneAndTwoRanks) {
  for (int64_t ranks : {1, 2}) {
    const Judged judged = judged_watch(recorded(ranks, 4, 1.0), std::nullopt);
    ASSERT_TRUE(judged.judged) << judged.not_judged_reason;
    EXPECT_FALSE(judged.found_something()) << judged.explanation;
    EXPECT_EQ(judged.effective_batch, ranks * 16);
  }
}

TEST(JudgeWatched, ALossDividedByTheLoopToIsScaledTwice) {
  const Judged judged = judged_watch(recorded(2, 4, 1.0 / 4), std::nullopt);
  ASSERT_TRUE(judged.diagnosis.has_value()) << judged.explanation;
  EXPECT_EQ(*judged.diagnosis, DiagnosisKind::loss_scaled_twice);
  EXPECT_NEAR(judged.training.steps[0].norm_ratio, 0.25, 1e-12);
}

TEST(JudgeWatched, UnequalTokenCountsNameThePerMicroBatchMean) {
  // Each micro-batch's own mean is the correct loop's loss: right only when the counts agree.
  const Judged judged = judged_watch(recorded(1, 4, 1.0, {3, 9, 5, 1}), std::nullopt);
  ASSERT_TRUE(judged.diagnosis.has_value()) << judged.explanation;
  EXPECT_EQ(*judged.diagnosis, DiagnosisKind::per_micro_batch_token_normalisation);
}

// A whole window, then one the loop ended after `kept` of GAS micro-steps (accelerate at the end
// of the data loader): there DeepSpeed's gradient is each kept micro-batch's mean divided by GAS.
std::vector<RankRecording> closed_early(int64_t ranks, int64_t gas, int64_t kept) {
  std::vector<RankRecording> result = recorded(ranks, gas, 1.0);
  const std::vector<RankRecording> second = recorded(ranks, gas, 1.0);
  std::vector<at::Tensor> averaged = {at::zeros({3, 2}, at::kDouble), at::zeros({2}, at::kDouble)};
  for (size_t r = 0; r < result.size(); ++r) {
    RankRecording& rank = result[r];
    WatchedWindow window = second[r].windows[0];
    window.micro_steps.resize(static_cast<size_t>(kept));
    for (const WatchedMicroStep& micro : window.micro_steps) {
      for (size_t p = 0; p < 2; ++p) {
        averaged[p] = averaged[p] + micro.summed_loss_gradients[p] / micro.items /
                                        static_cast<double>(gas * ranks);
      }
      rank.calls.insert(rank.calls.end(), {"forward", "engine.backward()", "engine.step()"});
    }
    rank.calls.insert(rank.calls.end() - 1, "engine.set_gradient_accumulation_boundary(True)");
    window.calls_at_close = static_cast<int64_t>(rank.calls.size());
    rank.windows.push_back(window);
  }
  for (RankRecording& rank : result) rank.windows[1].run_gradients = averaged;
  return result;
}

TEST(JudgeWatched, AWindowTheLoopClosedEarlyIsNamedOnlyWhenShort) {
  for (int64_t ranks : {1, 2}) {
    const Judged judged = judged_watch(closed_early(ranks, 4, 2), std::nullopt);
    ASSERT_TRUE(judged.diagnosis.has_value()) << judged.explanation;
    EXPECT_EQ(*judged.diagnosis, DiagnosisKind::window_closed_early);
    EXPECT_TRUE(judged.training.steps[0].gradients_match);
    EXPECT_NEAR(judged.training.steps[1].norm_ratio, 0.5, 1e-12);
    EXPECT_NE(judged.explanation.find("window 1 closed after 2 of gradient_accumulation_steps=4"),
              std::string::npos) << judged.explanation;
    EXPECT_NE(judged.explanation.find("set_gradient_accumulation_boundary(True)"),
              std::string::npos) << judged.explanation;
    // The batch the config trains is a whole window's, not the short one's.
    EXPECT_TRUE(judged.findings.empty()) << judged.findings[0];
    EXPECT_EQ(judged.effective_batch, ranks * 16);
  }
  // 3 of 4 micro-steps: 3/4 of the mean; all 4: a whole window, which is the golden.
  EXPECT_EQ(*judged_watch(closed_early(1, 4, 3), std::nullopt).diagnosis,
            DiagnosisKind::window_closed_early);
  EXPECT_FALSE(judged_watch(closed_early(1, 4, 4), std::nullopt).found_something());
  // One micro-step closed by the loop's own optimizer.step() predicts the same gradient, and is
  // that habit, not a short window.
  std::vector<RankRecording> stepped = closed_early(1, 4, 1);
  stepped[0].windows[1].closed_by = "optimizer.step()";
  const Judged judged = judged_watch(stepped, std::nullopt);
  ASSERT_TRUE(judged.diagnosis.has_value()) << judged.explanation;
  EXPECT_EQ(*judged.diagnosis, DiagnosisKind::optimizer_every_micro_step);
}

// The Trainer's loop: each micro-step's loss is its share of the window (summed token losses
// over the window's tokens), passed with scale_wrt_gas=False; `divided` is what DeepSpeed then
// divides by (1: nothing, as promised; GAS: the ZeRO 0 accident). per_rank: each rank divides by
// its own tokens instead of the window's across ranks.
std::vector<RankRecording> trainer_like(int64_t ranks, std::vector<std::vector<int64_t>> items,
                                        double divided, bool per_rank, bool flag = true) {
  std::vector<RankRecording> result;
  for (int64_t r = 0; r < ranks; ++r) {
    result.push_back(recorded(1, 4, 1.0, items[static_cast<size_t>(r)])[0]);
    result.back().rank = r;
    result.back().world_size = ranks;
    result.back().resolved.train_batch_size = ranks * 16;
  }
  int64_t all_items = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    for (int64_t n : items[static_cast<size_t>(r)]) all_items += n;
  }
  std::vector<at::Tensor> run = {at::zeros({3, 2}, at::kDouble), at::zeros({2}, at::kDouble)};
  for (size_t r = 0; r < result.size(); ++r) {
    int64_t rank_items = 0;
    for (int64_t n : items[r]) rank_items += n;
    for (WatchedMicroStep& micro : result[r].windows[0].micro_steps) {
      micro.scale_wrt_gas = !flag;
      for (size_t p = 0; p < 2; ++p) {
        // DeepSpeed averages the ranks; the Trainer multiplies by the ranks when it averages
        // tokens across them, so the window's loss is the sum over all tokens / all tokens.
        const double denominator = per_rank ? static_cast<double>(rank_items * ranks)
                                            : static_cast<double>(all_items);
        run[p] = run[p] + micro.summed_loss_gradients[p] / denominator / divided;
      }
    }
  }
  for (RankRecording& rank : result) rank.windows[0].run_gradients = run;
  return result;
}

TEST(JudgeWatched, ScaleWrtGasFalseDividedAllTheSameIsNamedByTheFlag) {
  const std::vector<std::vector<int64_t>> items = {{3, 9, 5, 1}, {4, 2, 7, 6}};
  // Promised and kept: the golden.
  EXPECT_FALSE(judged_watch(trainer_like(1, items, 1.0, false), std::nullopt).found_something());
  // Divided by GAS all the same, on 1 rank and (each rank by its own tokens) on 2.
  for (int64_t ranks : {1, 2}) {
    const Judged judged = judged_watch(trainer_like(ranks, items, 4.0, ranks > 1),
                                                std::nullopt);
    ASSERT_TRUE(judged.diagnosis.has_value()) << judged.explanation;
    EXPECT_EQ(*judged.diagnosis, DiagnosisKind::scale_wrt_gas_ignored) << judged.explanation;
  }
  // Equal micro-batches without the flag: the same gradient is the loop dividing twice.
  const Judged twice =
      judged_watch(trainer_like(1, {{4, 4, 4, 4}}, 4.0, false, false), std::nullopt);
  ASSERT_TRUE(twice.diagnosis.has_value()) << twice.explanation;
  EXPECT_EQ(*twice.diagnosis, DiagnosisKind::loss_scaled_twice);
}

TEST(JudgeWatched, EachRankDividingByItsOwnTokensIsPerRankNormalisation) {
  const Judged judged =
      judged_watch(trainer_like(2, {{3, 9, 5, 1}, {4, 2, 7, 6}}, 1.0, true), std::nullopt);
  ASSERT_TRUE(judged.diagnosis.has_value()) << judged.explanation;
  EXPECT_EQ(*judged.diagnosis, DiagnosisKind::per_rank_token_normalisation);
  // Ranks with the same token count: dividing by one's own is dividing by the window's.
  EXPECT_FALSE(judged_watch(trainer_like(2, {{3, 9, 5, 1}, {9, 3, 1, 5}}, 1.0, true),
                             std::nullopt)
                   .found_something());
}

TEST(JudgeWatched, AGradientNoMistakeExplainsIsUnexplainedNotPassed) {
  std::vector<RankRecording> ranks = recorded(1, 4, 1.0);
  ranks[0].windows[0].run_gradients[1] = ranks[0].windows[0].run_gradients[1] * 1.5;
  const Judged judged = judged_watch(ranks, std::nullopt);
  EXPECT_TRUE(judged.found_something());
  EXPECT_FALSE(judged.diagnosis.has_value());
  // A batch finding is added to it, never put in its place.
  const Judged with_batch = judged_watch(ranks, 64);
  EXPECT_FALSE(with_batch.diagnosis.has_value());
  ASSERT_EQ(with_batch.findings.size(), 1u);
  EXPECT_NE(with_batch.findings[0].find("effective batch is 16, not 64"), std::string::npos);
}

TEST(JudgeWatched, AnIntendedBatchTheConfigMissesIsNoAccumulation) {
  std::vector<RankRecording> ranks = recorded(1, 1, 1.0, {4});
  ranks[0].config.erase("gradient_accumulation_steps");
  const Judged judged = judged_watch(ranks, 16);
  ASSERT_TRUE(judged.diagnosis.has_value()) << judged.explanation;
  EXPECT_EQ(*judged.diagnosis, DiagnosisKind::no_accumulation);
  EXPECT_NE(judged.explanation.find("gradient_accumulation_steps is not set"), std::string::npos)
      << judged.explanation;
}

// The recording of a bfloat16 model. Each piece's precision twin is the piece as bfloat16
// computes it: `compute_error` unit roundoffs of relative error (a forward and backward in
// bfloat16 err by several; measured on the classifier of tests/watch: the twin 0.6-0.9 % of the
// gradient) and rounded. The run is what DeepSpeed makes of those same micro-step gradients when
// it sums them in bfloat16: each micro-batch's mean times loop_factor / (GAS x ranks), rounded,
// added into a rounded running sum.
std::vector<RankRecording> in_bfloat16(std::vector<RankRecording> ranks, double loop_factor,
                                       double compute_error = 8.0) {
  const auto bf16 = [](const at::Tensor& t) { return t.to(at::kBFloat16).to(at::kDouble); };
  const double gas = static_cast<double>(ranks[0].resolved.gradient_accumulation_steps);
  const double roundoff = unit_roundoff(Precision::bf16);
  std::vector<at::Tensor> run = {at::zeros({3, 2}, at::kDouble), at::zeros({2}, at::kDouble)};
  for (RankRecording& rank : ranks) {
    rank.resolved.dtype = "bfloat16";
    rank.resolved.grad_accum_dtype = "bfloat16";
    for (WatchedMicroStep& micro : rank.windows[0].micro_steps) {
      for (size_t p = 0; p < 2; ++p) {
        const at::Tensor& exact = micro.summed_loss_gradients[p];
        const at::Tensor twin =
            bf16(exact * (1.0 + compute_error * roundoff * at::randn_like(exact)));
        micro.twin_summed_loss_gradients.push_back(twin);
        const at::Tensor share =
            twin / micro.items * loop_factor / (gas * static_cast<double>(ranks.size()));
        run[p] = bf16(run[p] + bf16(share));
      }
    }
  }
  for (RankRecording& rank : ranks) rank.windows[0].run_gradients = run;
  return ranks;
}

TEST(JudgeWatched, ABfloat16RunIsJudgedAgainstItsPrecisionTwin) {
  for (int64_t ranks : {1, 2}) {
    const Judged judged = judged_watch(in_bfloat16(recorded(ranks, 4, 1.0), 1.0),
                                                std::nullopt);
    ASSERT_TRUE(judged.judged) << judged.not_judged_reason;
    EXPECT_FALSE(judged.found_something()) << judged.explanation;
    const StepJudgement& window = judged.training.steps[0];
    EXPECT_GT(window.twin_relative_error, 0.0);
    // Not within float32's tolerance: the precision twin is what lets it pass.
    EXPECT_GT(window.relative_error, 1e-4);
    EXPECT_EQ(window.gradients.front().name, "whole model (2 tensors)");
    EXPECT_LE(window.gradients.front().rms_error,
              kPrecisionTwinFactor * window.gradients.front().twin_rms_error);
  }
  const Judged twice = judged_watch(in_bfloat16(recorded(2, 4, 1.0), 0.25), std::nullopt);
  ASSERT_TRUE(twice.diagnosis.has_value()) << twice.explanation;
  EXPECT_EQ(*twice.diagnosis, DiagnosisKind::loss_scaled_twice);
  // A gradient 10 % off in one tensor is beyond bfloat16's noise here, and no mistake's.
  std::vector<RankRecording> off = in_bfloat16(recorded(1, 4, 1.0), 1.0);
  off[0].windows[0].run_gradients[0] = off[0].windows[0].run_gradients[0] * 1.1;
  const Judged unexplained = judged_watch(off, std::nullopt);
  EXPECT_TRUE(unexplained.found_something());
  EXPECT_FALSE(unexplained.diagnosis.has_value()) << unexplained.explanation;
}

// A float32 run whose float64 golden did not reproduce micro-step 1's loss on rank 0 (a float32
// mask inside the forward): the recording then holds the run's own-dtype pieces, which judge.
std::vector<RankRecording> float64_golden_failed(std::vector<RankRecording> ranks) {
  WatchedWindow& window = ranks[0].windows[0];
  window.golden_dtype = "float32";
  window.float64_failed_micro_step = 1;
  window.float64_failed = {true, 4.18087101, 4.17794665, 2.36e-5, false};
  return ranks;
}

TEST(JudgeWatched, AFloat64GoldenThatFailsItsSelfCheckIsSaidAndTheOwnDtypeGoldenJudges) {
  for (int64_t ranks : {1, 2}) {
    const Judged judged =
        judged_watch(float64_golden_failed(recorded(ranks, 4, 1.0)), std::nullopt);
    ASSERT_TRUE(judged.judged) << judged.not_judged_reason;
    EXPECT_FALSE(judged.found_something()) << judged.explanation;  // never a diagnosis
    EXPECT_NE(judged.golden_self_check_failed.find("micro-batch 1 of rank 0"), std::string::npos)
        << judged.golden_self_check_failed;
    EXPECT_NE(judged.golden_self_check_failed.find("4.17794665 in float64, but the loop "
                                                   "computed 4.18087101"),
              std::string::npos)
        << judged.golden_self_check_failed;
    EXPECT_NE(judged.golden_self_check_failed.find("124x"), std::string::npos);
    EXPECT_EQ(judged.golden.rfind("float32", 0), 0u) << judged.golden;
    EXPECT_EQ(judged.training.steps[0].golden_dtype, "float32");
  }
  // The own-dtype golden still tells the mistakes apart.
  const Judged twice =
      judged_watch(float64_golden_failed(recorded(2, 4, 0.25)), std::nullopt);
  ASSERT_TRUE(twice.diagnosis.has_value()) << twice.explanation;
  EXPECT_EQ(*twice.diagnosis, DiagnosisKind::loss_scaled_twice);
  EXPECT_FALSE(twice.golden_self_check_failed.empty());
  // A golden that passed says so: no self-check text, float64 judged.
  const Judged passed = judged_watch(recorded(1, 4, 1.0), std::nullopt);
  EXPECT_TRUE(passed.golden_self_check_failed.empty());
  EXPECT_EQ(passed.golden, "float64");
}

TEST(JudgeWatched, ABfloat16RunWhoseFloat64GoldenFailedIsJudgedByItsTwin) {
  // The twin is the run's own function here; the float64 pieces are another (10 % off).
  std::vector<RankRecording> ranks = in_bfloat16(recorded(1, 4, 1.0), 1.0);
  for (WatchedMicroStep& micro : ranks[0].windows[0].micro_steps) {
    micro.twin_summed_loss_gradients = micro.summed_loss_gradients;
    for (at::Tensor& g : micro.summed_loss_gradients) g = g * 1.1;
  }
  WatchedWindow& window = ranks[0].windows[0];
  window.run_gradients = {};
  for (size_t p = 0; p < 2; ++p) {
    at::Tensor sum = at::zeros_like(window.micro_steps[0].twin_summed_loss_gradients[p]);
    for (const WatchedMicroStep& micro : window.micro_steps) {
      sum = sum + micro.twin_summed_loss_gradients[p] / micro.items / 4.0;
    }
    window.run_gradients.push_back(sum);
  }
  window.golden_dtype = "bfloat16";
  window.float64_failed_micro_step = 0;
  window.float64_failed = {true, 2.0, 2.5, 0.1, false};
  const Judged judged = judged_watch(ranks, std::nullopt);
  EXPECT_FALSE(judged.found_something()) << judged.explanation;
  EXPECT_EQ(judged.training.steps[0].golden_dtype, "bfloat16");
  EXPECT_EQ(judged.training.steps[0].relative_error, 0.0);  // measured against the twin itself
  EXPECT_FALSE(judged.golden_self_check_failed.empty());
}

// One rank, `gas` micro-steps of 4 items whose gradients point the same way, as micro-batches of
// one task do: each piece is a shared gradient plus a little of its own, so a running sum grows
// with every micro-step.
std::vector<RankRecording> pointing_one_way(int64_t gas) {
  std::vector<RankRecording> ranks =
      recorded(1, gas, 1.0, std::vector<int64_t>(static_cast<size_t>(gas), 4));
  const std::vector<at::Tensor> shared = ranks[0].windows[0].micro_steps[0].summed_loss_gradients;
  for (WatchedMicroStep& micro : ranks[0].windows[0].micro_steps) {
    for (size_t p = 0; p < 2; ++p) {
      micro.summed_loss_gradients[p] = shared[p] + 0.1 * at::randn_like(shared[p]);
    }
  }
  return ranks;
}

TEST(JudgeWatched, ABfloat16SumOfManyMicroStepsIsLowPrecisionAccumulation) {
  // 32 micro-steps summed in bfloat16 against a twin that errs little: the running sum's
  // roundings are most of the run's error (measured with DeepSpeed 0.19.8 at GAS 32: 2.0-2.2x
  // the twin's in bfloat16, 1.07-1.17x with grad_accum_dtype fp32).
  std::vector<RankRecording> ranks = in_bfloat16(pointing_one_way(32), 1.0, 1.0);
  const Judged judged = judged_watch(ranks, std::nullopt);
  ASSERT_TRUE(judged.diagnosis.has_value())
      << judged.explanation << " relative error " << judged.training.steps[0].relative_error
      << ", the twin's " << judged.training.steps[0].twin_relative_error;
  EXPECT_EQ(*judged.diagnosis, DiagnosisKind::low_precision_accumulation);
  EXPECT_NE(judged.explanation.find("32 micro-steps were summed in bfloat16"), std::string::npos)
      << judged.explanation;
  EXPECT_NE(judged.explanation.find("refuses it at ZeRO stage 0"), std::string::npos);
  // Where DeepSpeed summed in float32 the same error has no known cause.
  ranks[0].resolved.grad_accum_dtype = "float32";
  const Judged float32_sum = judged_watch(ranks, std::nullopt);
  EXPECT_TRUE(float32_sum.found_something());
  EXPECT_FALSE(float32_sum.diagnosis.has_value()) << float32_sum.explanation;
}

// --golden own in bfloat16: the recording's pieces are the twin's (computed in the run's own
// dtype and kernels), no float64 piece beside them.
std::vector<RankRecording> own_golden(std::vector<RankRecording> ranks) {
  for (RankRecording& rank : ranks) {
    rank.golden_kind = "own";
    rank.windows[0].golden_dtype = rank.resolved.dtype;
    for (WatchedMicroStep& micro : rank.windows[0].micro_steps) {
      if (micro.twin_summed_loss_gradients.empty()) continue;
      micro.summed_loss_gradients = micro.twin_summed_loss_gradients;
      micro.twin_summed_loss_gradients.clear();
    }
  }
  return ranks;
}

TEST(JudgeWatched, TheOwnDtypeGoldenJudgesAndSaysSo) {
  const Judged passed = judged_watch(own_golden(recorded(2, 4, 1.0)), std::nullopt);
  ASSERT_TRUE(passed.judged) << passed.not_judged_reason;
  EXPECT_FALSE(passed.found_something()) << passed.explanation;
  EXPECT_EQ(passed.golden.rfind("float32: each micro-batch's forward and backward computed "
                                "again", 0),
            0u)
      << passed.golden;
  EXPECT_TRUE(passed.golden_self_check_failed.empty());
  const Judged twice = judged_watch(own_golden(recorded(2, 4, 0.25)), std::nullopt);
  ASSERT_TRUE(twice.diagnosis.has_value()) << twice.explanation;
  EXPECT_EQ(*twice.diagnosis, DiagnosisKind::loss_scaled_twice);
  // In bfloat16 the pieces are the run's own: a correct window passes within bfloat16's
  // tolerance, a loss divided twice is named.
  const Judged bf16 =
      judged_watch(own_golden(in_bfloat16(recorded(1, 4, 1.0), 1.0)), std::nullopt);
  EXPECT_FALSE(bf16.found_something()) << bf16.explanation;
  EXPECT_EQ(bf16.training.steps[0].golden_dtype, "bfloat16");
  const Judged bf16_twice =
      judged_watch(own_golden(in_bfloat16(recorded(1, 4, 1.0), 0.25)), std::nullopt);
  ASSERT_TRUE(bf16_twice.diagnosis.has_value()) << bf16_twice.explanation;
  EXPECT_EQ(*bf16_twice.diagnosis, DiagnosisKind::loss_scaled_twice);
}

TEST(JudgeWatched, AnOwnBfloat16GoldenSaysWhatTheBfloat16SumCostsWithoutFailing) {
  // 64 micro-steps summed in bfloat16 against the same pieces summed in float64: the running
  // sum's roundings are all that parts them, several times the unaccumulated batch's own
  // rounding but within what such a sum errs. Passed, with a finding and its fix; a loss divided
  // twice is still named.
  std::vector<RankRecording> ranks = pointing_one_way(64);
  ranks[0].versions.deepspeed = "0.19.8";
  const std::vector<RankRecording> correct = own_golden(in_bfloat16(ranks, 1.0, 1.0));
  const Judged judged = judged_watch(correct, std::nullopt);
  EXPECT_FALSE(judged.found_something()) << judged.explanation;
  const StepJudgement& window = judged.training.steps[0];
  EXPECT_GT(window.relative_error, 2.0 * window.twin_relative_error);
  ASSERT_EQ(judged.findings.size(), 1u);
  EXPECT_NE(judged.findings[0].find("summed its 64 micro-steps in bfloat16"), std::string::npos)
      << judged.findings[0];
  EXPECT_NE(judged.findings[0].find("grad_accum_dtype\": \"fp32"), std::string::npos)
      << judged.findings[0];
  const Judged twice =
      judged_watch(own_golden(in_bfloat16(ranks, 1.0 / 64, 1.0)), std::nullopt);
  ASSERT_TRUE(twice.diagnosis.has_value()) << twice.explanation;
  EXPECT_EQ(*twice.diagnosis, DiagnosisKind::loss_scaled_twice);
  // Summed in float32, the same error is beyond the batch's own rounding with no cause.
  std::vector<RankRecording> float32_sum = correct;
  float32_sum[0].resolved.grad_accum_dtype = "float32";
  const Judged unexplained = judged_watch(float32_sum, std::nullopt);
  EXPECT_TRUE(unexplained.found_something());
  EXPECT_FALSE(unexplained.diagnosis.has_value()) << unexplained.explanation;
}

TEST(JudgeWatched, AnOwnBfloat16GoldenAllowsTheRunningSumsRoundingAndNoMore) {
  // The allowance swept across its boundary: a correct bfloat16 sum of 16 micro-steps plus an
  // error along the golden of half the allowance passes, of twice the allowance does not.
  const std::vector<RankRecording> correct = own_golden(in_bfloat16(pointing_one_way(16), 1.0, 1.0));
  const Judged judged = judged_watch(correct, std::nullopt);
  ASSERT_FALSE(judged.found_something()) << judged.explanation;
  const StepJudgement& window = judged.training.steps[0];
  const double allowed = kPrecisionTwinFactor *
                         (window.twin_relative_error +
                          unit_roundoff(Precision::bf16) * std::sqrt(17.0 / 6.0));
  for (const double share : {0.5, 2.0}) {
    std::vector<RankRecording> off = correct;
    // Along a direction of its own (the golden's first tensor only, scaled), so that no
    // mistake's prediction is nearer.
    std::vector<at::Tensor>& run = off[0].windows[0].run_gradients;
    const double norm = std::sqrt(run[0].pow(2).sum().item<double>() +
                                  run[1].pow(2).sum().item<double>());
    const at::Tensor direction = at::randn_like(run[0]);
    run[0] = run[0] + direction * (share * allowed * norm /
                                   direction.pow(2).sum().sqrt().item<double>());
    const Judged swept = judged_watch(off, std::nullopt);
    EXPECT_EQ(swept.found_something(), share > 1.0)
        << share << "x the allowance: " << swept.explanation << " (relative error "
        << swept.training.steps[0].relative_error << ", allowed " << allowed << ")";
  }
}

TEST(JudgeWatched, NoGoldenOrLowPrecisionIsNotJudgedWithWhy) {
  std::vector<RankRecording> ranks = recorded(1, 4, 1.0);
  ranks[0].resolved.dtype = "bfloat16";  // no precision twin recorded
  EXPECT_FALSE(judged_watch(ranks, std::nullopt).judged);
  std::vector<RankRecording> half = in_bfloat16(ranks, 1.0);
  half[0].resolved.dtype = "float16";
  const Judged fp16 = judged_watch(half, std::nullopt);
  EXPECT_FALSE(fp16.judged);
  EXPECT_NE(fp16.not_judged_reason.find("float16"), std::string::npos);
  ranks[0].golden_not_computed = "window 0: the model casts inside its forward";
  const Judged judged = judged_watch(ranks, std::nullopt);
  EXPECT_NE(judged.not_judged_reason.find("casts inside its forward"), std::string::npos);
}

TEST(JudgeWatched, TooFewMemoryStepsSayWhatTheScriptMustRun) {
  std::vector<RankRecording> ranks = recorded(1, 4, 1.0);
  ranks[0].has_memory = true;  // sampled, but no boundary
  const Judged judged = judged_watch(ranks, std::nullopt);
  EXPECT_FALSE(judged.memory.judged);
  EXPECT_NE(judged.memory.not_judged_reason.find(
                "run at least 22 optimizer steps, all within --memory-steps, to judge memory"),
            std::string::npos)
      << judged.memory.not_judged_reason;
}

TEST(JudgeWatched, NoMemorySamplesFromARankKilledEarlyIsNotCalledUnwatched) {
  std::vector<RankRecording> ranks = recorded(1, 4, 1.0);
  ranks[0].memory_steps = 40;  // watched, but killed (--timeout) before the samples were written
  const std::string killed = judged_watch(ranks, std::nullopt).memory.not_judged_reason;
  EXPECT_EQ(killed.find("--memory-steps 0"), std::string::npos) << killed;
  EXPECT_NE(killed.find("wrote no memory samples (they are written after --memory-steps 40 "
                        "optimizer steps"),
            std::string::npos)
      << killed;
  ranks[0].memory_steps = 0;
  EXPECT_EQ(judged_watch(ranks, std::nullopt).memory.not_judged_reason,
            "memory not watched (--memory-steps 0)");
}

TEST(WatchRecording, ABadFileNamesItsPointer) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() /
                          ("trainrepro-watch-recording-test-" + std::to_string(::getpid()));
  fs::create_directories(folder);
  std::ofstream(folder / "rank0.json")
      << nlohmann::json{{"format", "trainrepro-watch"}, {"version", 1}, {"rank", 0},
                        {"world_size", "two"}}
             .dump();
  try {
    read_watch_recording(folder.string());
    ADD_FAILURE() << "a world size that is a string was read";
  } catch (const WatchRecordingError& error) {
    EXPECT_NE(std::string(error.what()).find("rank0.json:/world_size: expected an integer"),
              std::string::npos)
        << error.what();
  }
  fs::remove_all(folder);
  fs::create_directories(folder);
  EXPECT_TRUE(read_watch_recording(folder.string()).empty());  // no engine was created
  // The script's deepspeed.initialize raised: read as such, with nothing recorded.
  std::ofstream(folder / "rank0.json")
      << nlohmann::json{{"format", "trainrepro-watch"}, {"version", 1}, {"rank", 0},
                        {"world_size", 1},
                        {"initialize_raised", "AssertionError: Check batch related parameters"}}
             .dump();
  const std::vector<RankRecording> raised = read_watch_recording(folder.string());
  ASSERT_EQ(raised.size(), 1u);
  EXPECT_EQ(raised[0].initialize_raised, "AssertionError: Check batch related parameters");
  EXPECT_FALSE(raised[0].recorded());
  fs::remove_all(folder);
}

}  // namespace
}  // namespace trainrepro
