// The named DeepSpeed release decides defaults and refusals: each behaviour that differs
// between 0.16.9 and 0.19.8 (see harness/scenario/deepspeed_release.h) is checked both ways.
#include <gtest/gtest.h>

#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/plan.h"
#include "harness/json/scenario_error.h"
#include "scenario_file_fixture.h"

namespace trainrepro {
namespace {

const DeepSpeedRelease& release(const std::string& version) {
  std::string note;
  const DeepSpeedRelease* found = find_deepspeed_release(version, note);
  EXPECT_NE(found, nullptr) << version;
  return *found;
}

DeepSpeedConfig read(const nlohmann::json& config, const std::string& version = "0.19.8") {
  return read_deepspeed_config(config, "ds.json", "", release(version));
}

nlohmann::json batch_config() {
  return {{"train_batch_size", 32},
          {"train_micro_batch_size_per_gpu", 8},
          {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 0.001}}}}}};
}

std::string refusal(const BatchResolution& resolution) {
  const auto* error = std::get_if<ConfigError>(&resolution);
  return error ? error->message : "";
}

TEST(DeepSpeedRelease, GradientClippingDefaultsToOneFrom0193AndZeroBefore) {
  EXPECT_EQ(read(batch_config(), "0.19.8").gradient_clipping, 1.0);
  EXPECT_EQ(read(batch_config(), "0.16.9").gradient_clipping, 0.0);
  nlohmann::json off = batch_config();
  off["gradient_clipping"] = 0.0;
  EXPECT_EQ(read(off, "0.19.8").gradient_clipping, 0.0);
}

TEST(DeepSpeedRelease, TorchAdamTakesTorchAdamWDefaultWeightDecay) {
  nlohmann::json config = batch_config();
  config["optimizer"] = {{"type", "Adam"}, {"params", {{"torch_adam", true}}}};
  EXPECT_EQ(read(config).optimizer->weight_decay, 0.01);  // AdamW, as adam_w_mode defaults true
  config["optimizer"]["params"]["adam_w_mode"] = false;   // torch.optim.Adam: decay 0
  EXPECT_EQ(read(config).optimizer->weight_decay, 0.0);
  config["optimizer"] = {{"type", "AdamW"}};  // DeepSpeed's fused AdamW: decay 0
  EXPECT_EQ(read(config).optimizer->weight_decay, 0.0);
}

TEST(DeepSpeedRelease, OwnOptimizerNamesMatchInAnyCaseTorchNamesExactly) {
  nlohmann::json config = batch_config();
  config["optimizer"]["type"] = "ADAMW";
  EXPECT_EQ(read(config).optimizer->kind, OptimizerKind::adamw);
  config["optimizer"]["type"] = "SGD";
  EXPECT_EQ(read(config).optimizer->kind, OptimizerKind::sgd);
  config["optimizer"]["type"] = "sgd";
  const DeepSpeedConfig lower = read(config);
  EXPECT_FALSE(lower.optimizer.has_value());
  ASSERT_TRUE(lower.optimizer_refused.has_value());
  EXPECT_EQ(lower.optimizer_refused->kind, ConfigErrorKind::optimizer_not_supported);
  EXPECT_EQ(lower.optimizer_refused->message.rfind(
                "AssertionError: sgd is not a supported DeepSpeed Optimizer", 0),
            0u);
  config["optimizer"]["type"] = "lion";  // DeepSpeed's (any case), but not the engine's
  const DeepSpeedConfig lion = read(config);
  EXPECT_FALSE(lion.optimizer_refused.has_value());
  EXPECT_NE(lion.optimizer_not_implemented.find("not implemented by the reference engine"),
            std::string::npos);
  config["optimizer"]["type"] = "LAMB";  // DeepSpeed's and the engine's
  EXPECT_EQ(read(config).optimizer->kind, OptimizerKind::lamb);
}

TEST(DeepSpeedRelease, LegacyZeroBooleanReadsAsStageOne) {
  nlohmann::json config = batch_config();
  config["zero_optimization"] = true;
  const DeepSpeedConfig read_config = read(config);
  EXPECT_EQ(read_config.zero_stage, 1);
  ASSERT_EQ(read_config.warnings.size(), 1u);
  EXPECT_NE(read_config.warnings[0].find("deprecated"), std::string::npos);
}

TEST(DeepSpeedRelease, ZeroStageFourFailsTheSchemaBeforeAnyBatchCheck) {
  nlohmann::json config = batch_config();
  config["train_batch_size"] = 33;  // a batch mismatch DeepSpeed never reaches
  config["zero_optimization"] = {{"stage", 4}};
  const BatchResolution resolution = resolve_deepspeed_config(read(config), 1);
  EXPECT_EQ(std::get<ConfigError>(resolution).kind, ConfigErrorKind::zero_stage_unsupported);
  EXPECT_NE(refusal(resolution).find("validation error for DeepSpeedZeroConfig"),
            std::string::npos);
}

TEST(DeepSpeedRelease, UnknownZeroKeysAreRefusedByTheSchemaInEveryRelease) {
  nlohmann::json config = batch_config();
  config["train_batch_size"] = 33;  // a batch mismatch DeepSpeed never reaches
  config["zero_optimization"] = {{"stage", 2}, {"overlap_com", true}};
  for (const char* version : {"0.16.9", "0.19.8"}) {
    const BatchResolution resolution = resolve_deepspeed_config(read(config, version), 1);
    ASSERT_TRUE(std::holds_alternative<ConfigError>(resolution)) << version;
    EXPECT_EQ(std::get<ConfigError>(resolution).kind, ConfigErrorKind::unknown_section_key);
    EXPECT_EQ(refusal(resolution),
              "1 validation error for DeepSpeedZeroConfig: overlap_com: Extra inputs are not "
              "permitted [type=extra_forbidden, input_value=True, input_type=bool] (at "
              "ds.json:/zero_optimization/overlap_com; DeepSpeed " +
                  std::string(version) +
                  " refuses any key its schema does not know: did you mean \"overlap_comm\"?)");
  }
  // Known keys, aliases included, pass; the typo is not also warned about as "ignored".
  config["zero_optimization"] = {{"stage", 3},
                                 {"overlap_comm", true},
                                 {"stage3_prefetch_bucket_size", 1000},
                                 {"offload_optimizer", {{"device", "none"}, {"pin_mem", true}}}};
  const DeepSpeedConfig nested = read(config);
  EXPECT_NE(refusal(resolve_deepspeed_config(nested, 1))
                .find("for DeepSpeedZeroConfig: offload_optimizer.pin_mem: Extra inputs"),
            std::string::npos)
      << refusal(resolve_deepspeed_config(nested, 1));
  config["zero_optimization"]["offload_optimizer"].erase("pin_mem");
  config["train_batch_size"] = 32;
  const DeepSpeedConfig valid = read(config);
  EXPECT_TRUE(std::holds_alternative<ResolvedBatch>(resolve_deepspeed_config(valid, 1)));
  EXPECT_EQ(valid.warnings.size(), 3u);  // overlap_comm, the alias and offload_optimizer
}

// stage3_param_persistence_threshold (or its field name) is read, as pydantic's lax int >= 0
// reads it; DeepSpeed's default is 1e5 elements.
TEST(DeepSpeedRelease, ParamPersistenceThresholdIsReadWithItsDefault) {
  nlohmann::json config = batch_config();
  config["zero_optimization"] = {{"stage", 3}};
  EXPECT_EQ(read(config).zero3_param_persistence_threshold, 100000);
  config["zero_optimization"]["stage3_param_persistence_threshold"] = 1e3;  // a JSON float
  const DeepSpeedConfig alias = read(config);
  EXPECT_EQ(alias.zero3_param_persistence_threshold, 1000);
  EXPECT_TRUE(alias.warnings.empty()) << alias.warnings.front();  // implemented: no "ignored"
  config["zero_optimization"].erase("stage3_param_persistence_threshold");
  config["zero_optimization"]["param_persistence_threshold"] = 0;
  EXPECT_EQ(read(config).zero3_param_persistence_threshold, 0);
  // DeepSpeedConfigModel drops "auto" and takes the default (measured with 0.19.8).
  config["zero_optimization"]["param_persistence_threshold"] = "auto";
  const DeepSpeedConfig automatic = read(config);
  EXPECT_EQ(automatic.zero3_param_persistence_threshold, 100000);
  ASSERT_EQ(automatic.warnings.size(), 1u);
  EXPECT_NE(automatic.warnings[0].find("uses its default, 100000"), std::string::npos);
  for (const nlohmann::json& bad : {nlohmann::json(-1), nlohmann::json("many"),
                                    nlohmann::json(2.5)}) {
    config["zero_optimization"]["param_persistence_threshold"] = bad;
    const BatchResolution resolution = resolve_deepspeed_config(read(config), 1);
    ASSERT_TRUE(std::holds_alternative<ConfigError>(resolution)) << bad;
    EXPECT_NE(refusal(resolution).find("validation error for DeepSpeedZeroConfig: "
                                       "param_persistence_threshold: Input should be"),
              std::string::npos)
        << refusal(resolution);
  }
}

TEST(DeepSpeedRelease, UnknownPrecisionKeysAreRefusedBy0198AndIgnoredBy0169) {
  nlohmann::json config = batch_config();
  config["fp16"] = {{"enabled", false}, {"loss_scale_windw", 100}};
  const BatchResolution newest = resolve_deepspeed_config(read(config, "0.19.8"), 1);
  EXPECT_NE(refusal(newest).find("1 validation error for DeepSpeedFP16Config: loss_scale_windw: "
                                 "Extra inputs are not permitted [type=extra_forbidden, "
                                 "input_value=100, input_type=int]"),
            std::string::npos)
      << refusal(newest);
  const DeepSpeedConfig older = read(config, "0.16.9");
  EXPECT_TRUE(std::holds_alternative<ResolvedBatch>(resolve_deepspeed_config(older, 1)));
  ASSERT_EQ(older.warnings.size(), 1u);
  config.erase("fp16");
  config["bfloat16"] = {{"enabled", false}, {"immediate_grad_updates", true}};  // the old name
  EXPECT_NE(refusal(resolve_deepspeed_config(read(config, "0.19.8"), 1))
                .find("for DeepSpeedBF16Config: immediate_grad_updates: Extra inputs are not "
                      "permitted [type=extra_forbidden, input_value=True, input_type=bool] (at "
                      "ds.json:/bfloat16/immediate_grad_updates; DeepSpeed 0.19.8 refuses any key "
                      "its schema does not know: did you mean \"immediate_grad_update\"?)"),
            std::string::npos);
}

TEST(DeepSpeedRelease, RemovedKeysAreRefusedBy0198AndWarnedAboutBy0169) {
  nlohmann::json config = batch_config();
  config["sparse_gradients"] = true;
  const BatchResolution newest = resolve_deepspeed_config(read(config, "0.19.8"), 1);
  EXPECT_EQ(std::get<ConfigError>(newest).kind, ConfigErrorKind::removed_key);
  EXPECT_NE(refusal(newest).find("Sparse compression of dense torch.nn.Embedding gradients has "
                                 "been removed"),
            std::string::npos);
  const DeepSpeedConfig older = read(config, "0.16.9");
  EXPECT_TRUE(std::holds_alternative<ResolvedBatch>(resolve_deepspeed_config(older, 1)));
  ASSERT_EQ(older.warnings.size(), 1u);
  EXPECT_NE(older.warnings[0].find("a DeepSpeed feature the reference engine does not"),
            std::string::npos);
}

TEST(DeepSpeedRelease, WarningsTellIgnoredKeysFromUnimplementedFeatures) {
  nlohmann::json config = batch_config();
  config["tensor_parallel"] = {{"autotp_size", 2}};
  config["gradient_acumulation_steps"] = 4;  // a typo DeepSpeed silently ignores
  const DeepSpeedConfig read_config = read(config);
  ASSERT_EQ(read_config.warnings.size(), 2u);
  EXPECT_NE(read_config.warnings[0].find("gradient_acumulation_steps: not a DeepSpeed 0.19.8 "
                                         "setting: DeepSpeed ignores it too"),
            std::string::npos);
  EXPECT_NE(read_config.warnings[1].find("tensor_parallel: a DeepSpeed feature"), std::string::npos);
}

TEST(DeepSpeedRelease, ManagedGradientAccumulationExistsFrom0194) {
  nlohmann::json config = batch_config();
  config["managed_gradient_accumulation"] = false;
  EXPECT_FALSE(read(config, "0.19.8").managed_gradient_accumulation);
  const DeepSpeedConfig older = read(config, "0.16.9");
  EXPECT_TRUE(older.managed_gradient_accumulation);
  ASSERT_EQ(older.warnings.size(), 1u);
  EXPECT_NE(older.warnings[0].find("ignores this key"), std::string::npos);
}

TEST(DeepSpeedRelease, PatchReleasesOfTheOldLineReadAsItsCheckedRelease) {
  std::string note;
  const DeepSpeedRelease* found = find_deepspeed_release("0.16.4", note);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->version, "0.16.9");
  EXPECT_NE(note.find("semantics of 0.16.9"), std::string::npos);
  EXPECT_EQ(find_deepspeed_release("0.18.2", note), nullptr);
  EXPECT_EQ(find_deepspeed_release("0.19.7", note), nullptr);  // defaults moved within 0.19
}

TEST(DeepSpeedConfigText, CommentsAndTrailingCommasAreAcceptedAsHjsonDoes) {
  const std::string text = R"({
    # hjson comment
    "train_batch_size": 32, // line comment
    /* block */ "optimizer": {"type": "AdamW", "params": {"lr": "a // not a comment",},},
  })";
  const nlohmann::json parsed = parse_json_text(text, "ds.json", JsonDialect::deepspeed_config);
  EXPECT_EQ(parsed["train_batch_size"], 32);
  EXPECT_EQ(parsed["optimizer"]["params"]["lr"], "a // not a comment");
  EXPECT_THROW(parse_json_text(text, "ds.json", JsonDialect::strict), ScenarioError);
}

class InitializeChecks : public ScenarioFileTest {
 protected:
  PlanResolution plan_of(const nlohmann::json& scenario) {
    return resolve_plan(load_scenario(write("s.json", scenario.dump())), Device::cpu);
  }
  static std::optional<ConfigErrorKind> refused(const PlanResolution& resolution) {
    const auto* error = std::get_if<ConfigError>(&resolution);
    return error ? std::optional<ConfigErrorKind>(error->kind) : std::nullopt;
  }
};

TEST_F(InitializeChecks, SgdUnderZeroNeedsZeroAllowUntestedOptimizer) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["optimizer"] = {{"type", "SGD"}, {"params", {{"lr", 0.1}}}};
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 1}};
  EXPECT_EQ(refused(plan_of(scenario)), ConfigErrorKind::untested_zero_optimizer);
  scenario["deepspeed"]["zero_allow_untested_optimizer"] = true;
  EXPECT_EQ(refused(plan_of(scenario)), std::nullopt);
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 0}};
  scenario["deepspeed"].erase("zero_allow_untested_optimizer");
  EXPECT_EQ(refused(plan_of(scenario)), std::nullopt);  // no ZeRO, no gate
}

// engine.py _configure_optimizer: with the optimizer offloaded (cpu or nvme) a script's own torch
// optimizer is refused unless zero_force_ds_cpu_optimizer is false; the config's own optimizer,
// no offload, or offload "none" is not.
TEST_F(InitializeChecks, ClientOptimizerWithOffloadNeedsForceDsCpuOptimizerOff) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"].erase("optimizer");
  scenario["client_optimizer"] = {{"type", "AdamW"}, {"params", {{"lr", 0.001}}}};
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 2},
                                                {"offload_optimizer", {{"device", "cpu"}}}};
  const PlanResolution resolution = plan_of(scenario);
  EXPECT_EQ(refused(resolution), ConfigErrorKind::client_optimizer_with_offload);
  EXPECT_NE(std::get<ConfigError>(resolution).message.find("torch.optim.AdamW"), std::string::npos);
  scenario["deepspeed"]["zero_optimization"]["offload_optimizer"]["device"] = "nvme";
  EXPECT_EQ(refused(plan_of(scenario)), ConfigErrorKind::client_optimizer_with_offload);
  scenario["deepspeed"]["zero_force_ds_cpu_optimizer"] = false;
  EXPECT_EQ(refused(plan_of(scenario)), std::nullopt);
  scenario["deepspeed"].erase("zero_force_ds_cpu_optimizer");
  scenario["deepspeed"]["zero_optimization"]["offload_optimizer"]["device"] = "none";
  EXPECT_EQ(refused(plan_of(scenario)), std::nullopt);
  scenario["deepspeed"]["zero_optimization"]["offload_optimizer"]["device"] = "cpu";
  scenario.erase("client_optimizer");
  scenario["deepspeed"]["optimizer"] = {{"type", "AdamW"}, {"params", {{"lr", 0.001}}}};
  EXPECT_EQ(refused(plan_of(scenario)), std::nullopt);  // DeepSpeed builds its CPU Adam itself
}

TEST_F(InitializeChecks, DirectBackwardAfterAnEngineForwardFollowsTheRelease) {
  nlohmann::json scenario = valid_scenario();
  scenario["loop"] = {{"loss_scaling", "none"}};
  EXPECT_EQ(refused(plan_of(scenario)), ConfigErrorKind::direct_backward_unsupported);
  scenario["loop"]["forward"] = "module";  // engine.module(x) bypasses the hooks: unscaled sum
  const PlanResolution bypass = plan_of(scenario);
  ASSERT_TRUE(std::holds_alternative<Plan>(bypass));
  EXPECT_FALSE(std::get<Plan>(bypass).direct_backward_through_engine);
  scenario["loop"].erase("forward");
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 2}};  // hooked: scaled like engine
  const PlanResolution hooked = plan_of(scenario);
  ASSERT_TRUE(std::holds_alternative<Plan>(hooked));
  EXPECT_TRUE(std::get<Plan>(hooked).direct_backward_through_engine);
  scenario["deepspeed_version"] = "0.16.9";  // before 0.18.3: plain autograd at every stage
  const PlanResolution old = plan_of(scenario);
  ASSERT_TRUE(std::holds_alternative<Plan>(old));
  EXPECT_FALSE(std::get<Plan>(old).direct_backward_through_engine);
}

// runtime/engine.py no_sync(): asserted at ZeRO 2-3 at the first entry; at ZeRO 1 a boundary
// backward inside it leaves engine.step() without reduced gradients (KeyError, measured on
// 0.19.8); at ZeRO 0 it trains, unreduced. A loop whose every backward is a window's first
// (GAS 1) never enters it.
TEST_F(InitializeChecks, NoSyncIsRefusedWhereDeepSpeedRefusesIt) {
  nlohmann::json scenario = valid_scenario();  // GAS 4
  for (const char* sync : {"first_micro_step", "never"}) {
    scenario["loop"] = {{"gradient_sync", sync}};
    scenario["deepspeed"]["zero_optimization"] = {{"stage", 0}};
    EXPECT_EQ(refused(plan_of(scenario)), std::nullopt) << sync;
    scenario["deepspeed"]["zero_optimization"] = {{"stage", 1}};
    EXPECT_EQ(refused(plan_of(scenario)), ConfigErrorKind::no_sync_boundary_at_zero_stage_1)
        << sync;
    for (int stage : {2, 3}) {
      scenario["deepspeed"]["zero_optimization"] = {{"stage", stage}};
      EXPECT_EQ(refused(plan_of(scenario)), ConfigErrorKind::no_sync_with_partitioned_gradients)
          << sync << " stage " << stage;
    }
  }
  scenario["loop"] = {{"gradient_sync", "every_micro_step"}};  // DeepSpeed has no such switch
  EXPECT_EQ(refused(plan_of(scenario)), std::nullopt);
  scenario["loop"] = {{"gradient_sync", "first_micro_step"}};
  scenario["deepspeed"]["train_micro_batch_size_per_gpu"] = 32;  // GAS 1: never inside no_sync
  EXPECT_EQ(refused(plan_of(scenario)), std::nullopt);
  scenario["deepspeed"]["train_micro_batch_size_per_gpu"] = 8;
  scenario["loop"] = {{"gradient_sync", "never"}, {"stepping", "once_per_window"}};
  try {
    plan_of(scenario);
    ADD_FAILURE() << "a sync switch with stepping around the engine was accepted";
  } catch (const ScenarioError& error) {
    EXPECT_NE(std::string(error.what()).find("s.json:/loop/gradient_sync: expected \"engine\" or "
                                             "\"every_micro_step\" with \"stepping\": "
                                             "\"once_per_window\", found \"never\""),
              std::string::npos)
        << error.what();
  }
}

TEST_F(InitializeChecks, UnknownReleaseIsRejectedWithTheKnownOnes) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed_version"] = "0.18.0";
  try {
    load_scenario(write("s.json", scenario.dump()));
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& error) {
    EXPECT_NE(std::string(error.what())
                  .find(":/deepspeed_version: expected a DeepSpeed release "
                        "this harness knows (0.16.9"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace trainrepro
