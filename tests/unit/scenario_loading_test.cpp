// Strict scenario loading: defaults for absent keys, and for every kind of bad input an error
// that starts with file:pointer and says what was expected and what was found.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/scenario/load_scenario.h"
#include "harness/json/scenario_error.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class ScenarioLoading : public ScenarioFileTest {
 protected:
  void SetUp() override {
    ScenarioFileTest::SetUp();
    path_ = (directory_ / "scenario.json").string();  // known before any message is built
  }

  // Loads `scenario` and returns the error message, or "" when it loaded.
  std::string error_of(const nlohmann::json& scenario) { return error_of_text(scenario.dump(2)); }
  std::string error_of_text(const std::string& text) {
    write("scenario.json", text);
    try {
      load_scenario(path_);
    } catch (const ScenarioError& error) {
      return error.what();
    }
    return "";
  }
  std::string path_;
};

TEST_F(ScenarioLoading, ValidScenarioTakesDefaultsForAbsentKeys) {
  const Scenario scenario = load_scenario(write("s.json", valid_scenario().dump()));
  EXPECT_EQ(scenario.name, "valid");
  EXPECT_EQ(scenario.world_size, 1);
  EXPECT_EQ(scenario.device, DeviceChoice::cpu);
  EXPECT_EQ(scenario.golden.steps, 4);
  EXPECT_TRUE(scenario.tags.empty());
  EXPECT_EQ(scenario.expect.outcome, ExpectedOutcome::pass);
  EXPECT_EQ(scenario.deepspeed.batch.train_batch_size, 32);
  EXPECT_FALSE(scenario.deepspeed.batch.gradient_accumulation_steps.has_value());
  ASSERT_TRUE(scenario.deepspeed.optimizer.has_value());
  EXPECT_EQ(scenario.deepspeed.optimizer->kind, OptimizerKind::adamw);
  EXPECT_TRUE(scenario.deepspeed.warnings.empty());
  const auto& mlp = std::get<MlpOptions>(scenario.model.options);
  EXPECT_EQ(mlp.dims, (std::vector<int64_t>{16, 64, 4}));
  EXPECT_EQ(mlp.activation, Activation::relu);
}

// Every scenario that trains gets a memory verdict: without loop.steps the loop runs the steps
// one needs (warm-up + two windows), widened with an evaluation's period; opting out needs a
// reason, and a reason without opting out is refused.
TEST_F(ScenarioLoading, LoopRunsTheStepsAMemoryVerdictNeedsUnlessMemoryOptsOut) {
  nlohmann::json scenario = valid_scenario();
  EXPECT_EQ(load_scenario(write("a.json", scenario.dump())).loop.steps, 5 + 2 * 8 + 1);

  scenario["golden"]["steps"] = 30;
  EXPECT_EQ(load_scenario(write("b.json", scenario.dump())).loop.steps, 30);

  scenario["golden"]["steps"] = 4;
  scenario["loop"]["evaluation"] = {{"every", 10}};
  EXPECT_EQ(load_scenario(write("c.json", scenario.dump())).loop.steps, 5 + 2 * 11 + 1);

  scenario["loop"].erase("evaluation");
  scenario["memory"] = {{"warmup_steps", 2}, {"window", 3}};
  EXPECT_EQ(load_scenario(write("d.json", scenario.dump())).loop.steps, 2 + 2 * 3 + 1);

  // fp16's dynamic scale skips its first windows (fewer than golden.steps) before the warm-up.
  scenario["deepspeed"]["fp16"] = {{"enabled", true}};
  EXPECT_EQ(load_scenario(write("g.json", scenario.dump())).loop.steps, 4 + 2 + 2 * 3 + 1);
  scenario["deepspeed"]["fp16"]["loss_scale"] = 128;  // static: nothing skipped to calibrate
  EXPECT_EQ(load_scenario(write("h.json", scenario.dump())).loop.steps, 2 + 2 * 3 + 1);
  scenario["deepspeed"].erase("fp16");

  scenario["memory"] = {{"judge", false}, {"reason", "measured by memory/mlp-* instead"}};
  const Scenario opted_out = load_scenario(write("e.json", scenario.dump()));
  EXPECT_EQ(opted_out.loop.steps, 4);
  EXPECT_FALSE(opted_out.memory.judge);
  EXPECT_EQ(opted_out.memory.reason, "measured by memory/mlp-* instead");

  scenario["loop"]["steps"] = 6;  // explicit: kept, and judged as too short where it is
  EXPECT_EQ(load_scenario(write("f.json", scenario.dump())).loop.steps, 6);

  scenario["memory"] = {{"judge", false}};
  EXPECT_NE(error_of(scenario).find(path_ + ":/memory/reason: required key is missing"),
            std::string::npos)
      << error_of(scenario);
  scenario["memory"] = {{"judge", false}, {"reason", ""}};
  EXPECT_NE(error_of(scenario).find(path_ + ":/memory/reason: expected a sentence"),
            std::string::npos)
      << error_of(scenario);
  scenario["memory"] = {{"reason", "why"}};
  EXPECT_NE(error_of(scenario).find(path_ + ":/memory/reason: expected only with \"judge\": false"),
            std::string::npos)
      << error_of(scenario);
}

TEST_F(ScenarioLoading, MalformedJsonGivesLineAndColumn) {
  const std::string error = error_of_text("{\n  \"name\": \"x\",\n  \"tags\": [1,,]\n}\n");
  EXPECT_EQ(error.rfind(path_ + ":3:14: invalid JSON: syntax error", 0), 0u) << error;
}

TEST_F(ScenarioLoading, MissingFileSaysSo) {
  try {
    load_scenario((directory_ / "absent.json").string());
    FAIL() << "expected an error";
  } catch (const ScenarioError& error) {
    EXPECT_EQ(std::string(error.what()), (directory_ / "absent.json").string() +
                                             ": cannot open the file: No such file or directory");
  }
}

TEST_F(ScenarioLoading, WrongTypeNamesPointerExpectedAndFound) {
  nlohmann::json scenario = valid_scenario();
  scenario["golden"]["train_batch_size"] = "32";
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/golden/train_batch_size: expected a positive integer, "
                                    "found the string \"32\"");
}

TEST_F(ScenarioLoading, UnknownKeyIsRejectedWithSuggestion) {
  nlohmann::json scenario = valid_scenario();
  scenario["golden"]["stesp"] = 3;
  EXPECT_EQ(error_of(scenario),
            path_ +
                ":/golden/stesp: unknown key \"stesp\" (did you mean \"steps\"?); known keys "
                "here: \"steps\", \"train_batch_size\"");
}

TEST_F(ScenarioLoading, UnknownTopLevelKeyIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["wrold_size"] = 2;
  EXPECT_NE(error_of(scenario).find(path_ + ":/wrold_size: unknown key \"wrold_size\" (did you "
                                            "mean \"world_size\"?)"),
            std::string::npos);
}

TEST_F(ScenarioLoading, UnknownModelNamesTheZoo) {
  nlohmann::json scenario = valid_scenario();
  scenario["model"]["name"] = "resnet";
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/model/name: unknown model \"resnet\"; available: "
                                    "\"mlp\", \"gpt\", \"torchscript\"");
}

TEST_F(ScenarioLoading, UnknownModelOptionIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["model"]["options"]["dim"] = {16, 4};
  EXPECT_NE(error_of(scenario).find(path_ + ":/model/options/dim: unknown key \"dim\" (did you "
                                            "mean \"dims\"?)"),
            std::string::npos);
}

// "parameter_groups" resolve to the trainable parameters' names, each with its weight decay; what
// torch.optim refuses and what would silently train wrong are located errors.
TEST_F(ScenarioLoading, ParameterGroupsResolveByNameAndRefuseWhatWouldTrainWrong) {
  nlohmann::json scenario = valid_scenario();  // mlp [16, 64, 4]
  scenario["deepspeed"]["optimizer"]["params"]["weight_decay"] = 0.1;
  scenario["model"]["frozen"] = {"layers.0.bias"};
  scenario["parameter_groups"] = nlohmann::json::parse(
      R"([{}, {"names_containing": ["bias"], "weight_decay": 0.0}])");
  const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
  const std::vector<ParameterGroup>& groups = loaded.deepspeed.optimizer->parameter_groups;
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, (std::vector<std::string>{"layers.0.weight", "layers.1.weight"}));
  EXPECT_EQ(groups[0].weight_decay, 0.1);  // the optimizer's, where the group sets none
  EXPECT_EQ(groups[1].names, (std::vector<std::string>{"layers.1.bias"}));  // frozen dropped
  EXPECT_EQ(groups[1].weight_decay, 0.0);

  const auto error_with = [&](const char* groups_text) {
    nlohmann::json changed = scenario;
    changed["parameter_groups"] = nlohmann::json::parse(groups_text);
    return error_of(changed);
  };
  EXPECT_EQ(error_with(R"([{"params": ["layers.1"]}, {"names_containing": ["bias"]}, {}])"),
            path_ + ":/parameter_groups/1: parameter \"layers.1.bias\" is in group 0 and in this "
                    "one (torch.optim refuses it: \"some parameters appear in more than one "
                    "parameter group\")");
  EXPECT_EQ(error_with(R"([{"names_containing": ["bias"]}])"),
            path_ + ":/parameter_groups: trainable parameter \"layers.0.weight\" is in no group, "
                    "so the optimizer would never update it: add a group without \"params\" for "
                    "every parameter the others leave out (or freeze it in model.frozen)");
  EXPECT_EQ(error_with(R"([{"params": ["layers.0.bias"]}, {}])"),
            path_ + ":/parameter_groups/0: this group holds no trainable parameter (it selects "
                    "none, or only frozen ones): remove it; this model's parameters: "
                    "layers.<0-1>.weight, layers.<0-1>.bias");
  EXPECT_EQ(error_with(R"([{"params": ["layer.1"]}, {}])").rfind(
                path_ + ":/parameter_groups/0/params/0: expected the name of a parameter or of a "
                        "module holding some",
                0),
            0u);
  EXPECT_EQ(error_with(R"([{"lr": -0.1}])").rfind(path_ + ":/parameter_groups/0/lr: expected", 0),
            0u);
  EXPECT_EQ(error_with(R"([{}, {"weight_decya": 0}])"),
            path_ + ":/parameter_groups/1/weight_decya: unknown key \"weight_decya\" (did you "
                    "mean \"weight_decay\"?); known keys here: \"lr\", \"names_containing\", "
                    "\"params\", \"weight_decay\"");
  EXPECT_EQ(error_with(R"([{}, {}])").rfind(path_ + ":/parameter_groups/1: a second group without",
                                              0),
            0u);
  EXPECT_EQ(error_with("[]").rfind(path_ + ":/parameter_groups: expected a non-empty array", 0),
            0u);
  // Legal Python that selects nothing is a warning, with the model's names.
  scenario["parameter_groups"] =
      nlohmann::json::parse(R"([{}, {"names_containing": ["bias", "LayerNorm.weight"]}])");
  const Scenario warned = load_scenario(write("s.json", scenario.dump()));
  const std::vector<std::string>& warnings = warned.deepspeed.warnings;
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("/parameter_groups/1/names_containing/1: \"LayerNorm.weight\" is in no "
                  "parameter's name") != std::string::npos;
  })) << nlohmann::json(warnings).dump();
}

// A group's own "lr" (LLaVA's mm_projector_lr) defaults to the optimizer's. A scheduler from the
// config that writes one rate into every group (WarmupLR with warmup_max_lr, WarmupDecayLR,
// OneCycle) overwrites it: a warning; WarmupCosineLR and WarmupLR without warmup_max_lr keep it.
TEST_F(ScenarioLoading, ParameterGroupLrAndTheSchedulersThatOverwriteIt) {
  nlohmann::json scenario = valid_scenario();  // mlp [16, 64, 4], lr from the optimizer
  const double optimizer_lr = scenario["deepspeed"]["optimizer"]["params"]["lr"].get<double>();
  scenario["parameter_groups"] =
      nlohmann::json::parse(R"([{"params": ["layers.0"], "lr": 2e-05}, {}])");
  const auto warnings_with = [&](const char* scheduler_text) {
    nlohmann::json changed = scenario;
    if (scheduler_text) changed["deepspeed"]["scheduler"] = nlohmann::json::parse(scheduler_text);
    const Scenario loaded = load_scenario(write("scenario.json", changed.dump()));
    const std::vector<ParameterGroup>& groups = loaded.deepspeed.optimizer->parameter_groups;
    EXPECT_EQ(groups[0].lr, 2e-05);
    EXPECT_EQ(groups[1].lr, optimizer_lr);
    std::string overwritten;
    for (const std::string& w : loaded.deepspeed.warnings) {
      if (w.find("are overwritten") != std::string::npos) overwritten = w;
    }
    return overwritten;
  };
  EXPECT_EQ(warnings_with(nullptr), "");
  EXPECT_EQ(warnings_with(R"({"type": "WarmupCosineLR", "params": {"total_num_steps": 10}})"), "");
  EXPECT_EQ(warnings_with(R"({"type": "WarmupLR", "params": {"warmup_num_steps": 5}})"), "");
  EXPECT_EQ(
      warnings_with(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 10}})"),
      path_ + ":/parameter_groups: the param groups' own learning rates (group 0 2e-05) are "
              "overwritten: DeepSpeed's WarmupDecayLR warms up to one rate, warmup_max_lr 0.001, "
              "then decays it, in every param group, from its construction on, so every group "
              "trains at the same rate. WarmupCosineLR (which scales each group's lr) or WarmupLR "
              "without warmup_max_lr keep them apart");
  EXPECT_NE(warnings_with(R"({"type": "WarmupLR", "params": {"warmup_max_lr": 0.01}})"), "");
  EXPECT_NE(warnings_with(R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.001,
                                                            "cycle_max_lr": 0.01}})"),
            "");
}

// A typo in "frozen" would silently train everything; freezing everything trains nothing.
TEST_F(ScenarioLoading, FrozenEntriesMustNameParametersAndLeaveOneTrainable) {
  nlohmann::json scenario = valid_scenario();  // mlp [16, 64, 4]
  scenario["model"]["frozen"] = {"layers.0"};
  EXPECT_EQ(load_scenario(write("s.json", scenario.dump())).model.frozen,
            (std::vector<std::string>{"layers.0"}));
  scenario["model"]["frozen"] = {"layers.0", "layer.1"};
  EXPECT_EQ(error_of(scenario),
            path_ + ":/model/frozen/1: expected the name of a parameter or of a module holding "
                    "some (as named_parameters() writes them), found \"layer.1\"; this model's "
                    "parameters: layers.<0-1>.weight, layers.<0-1>.bias");
  scenario["model"]["frozen"] = {"layers"};
  EXPECT_EQ(error_of(scenario).rfind(path_ + ":/model/frozen: every parameter is frozen", 0), 0u)
      << error_of(scenario);
  scenario["model"]["frozen"] = "layers.0";
  EXPECT_NE(error_of(scenario).find(":/model/frozen: expected an array of strings"),
            std::string::npos);
}

TEST_F(ScenarioLoading, UnknownEnumValueNamesTheAllowedOnes) {
  nlohmann::json scenario = valid_scenario();
  scenario["device"] = "gpu";
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/device: expected one of \"cpu\", \"cuda\", \"auto\", "
                                    "found \"gpu\"");
}

TEST_F(ScenarioLoading, ZeroGoldenBatchIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["golden"]["train_batch_size"] = 0;
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/golden/train_batch_size: expected a positive integer, "
                                    "found the number 0");
}

TEST_F(ScenarioLoading, NegativeWorldSizeIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["world_size"] = -2;
  EXPECT_EQ(error_of(scenario),
            path_ + ":/world_size: expected a positive integer, found the number -2");
}

TEST_F(ScenarioLoading, FractionalBatchInDeepSpeedConfigIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["train_batch_size"] = 32.5;
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/deepspeed/train_batch_size: expected an integer or "
                                    "null, found the number 32.5");
}

TEST_F(ScenarioLoading, HuggingFaceAutoValueIsExplained) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["gradient_accumulation_steps"] = "auto";
  EXPECT_NE(error_of(scenario).find(path_ + ":/deepspeed/gradient_accumulation_steps: 1 value is "
                                            "\"auto\", which the Hugging Face Trainer fills in"),
            std::string::npos)
      << error_of(scenario);
}

TEST_F(ScenarioLoading, NullBatchKeyReadsAsAbsentLikeDeepSpeed) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["gradient_accumulation_steps"] = nullptr;
  EXPECT_EQ(error_of(scenario), "");
}

TEST_F(ScenarioLoading, DuplicateKeyIsRejected) {
  const std::string error = error_of_text(
      R"({"name": "a", "deepspeed": {"train_batch_size": 8, "train_batch_size": 16}})");
  EXPECT_EQ(error, path_ +
                       ":/deepspeed/train_batch_size: key \"train_batch_size\" appears twice "
                       "in the same object; JSON keeps only the last one, so remove one of "
                       "them");
}

TEST_F(ScenarioLoading, MissingRequiredSectionIsNamed) {
  nlohmann::json scenario = valid_scenario();
  scenario.erase("golden");
  EXPECT_EQ(error_of(scenario), path_ + ":/golden: required key is missing");
}

TEST_F(ScenarioLoading, MissingOptimizerExplainsWhyItIsNeeded) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"].erase("optimizer");
  EXPECT_NE(error_of(scenario).find(path_ + ":/deepspeed/optimizer: required key is missing: "
                                            "DeepSpeed builds no optimizer without one"),
            std::string::npos)
      << error_of(scenario);
}

TEST_F(ScenarioLoading, UnimplementedOptimizerIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["optimizer"]["type"] = "Lion";
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/deepspeed/optimizer/type: DeepSpeed 0.19.8 optimizer "
                                    "\"Lion\" is not implemented by the reference engine "
                                    "(implemented: \"Adam\", \"AdamW\", \"Lamb\", \"SGD\")");
}

TEST_F(ScenarioLoading, ModelThatDoesNotFitTheDataIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["model"]["options"]["dims"] = {12, 64, 4};
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/model/options/dims: the first dimension (12) must "
                                    "equal the data's features (16)");
}

TEST_F(ScenarioLoading, WrongElementInListIsLocated) {
  nlohmann::json scenario = valid_scenario();
  scenario["model"]["options"]["dims"] = {16, "64", 4};
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/model/options/dims/1: expected an integer >= 1, "
                                    "found the string \"64\"");
}

TEST_F(ScenarioLoading, NameThatCannotNameAFileIsRejected) {
  nlohmann::json scenario = valid_scenario();
  scenario["name"] = "../escape";
  EXPECT_NE(error_of(scenario).find(path_ + ":/name: expected lowercase letters"),
            std::string::npos);
}

TEST_F(ScenarioLoading, ConfigErrorExpectationNeedsItsName) {
  nlohmann::json scenario = valid_scenario();
  scenario["expect"] = {{"outcome", "config_error"}, {"error", "batch_mismatch"}};
  EXPECT_NE(error_of(scenario).find(path_ + ":/expect/error: expected one of "
                                            "\"batch_size_missing\""),
            std::string::npos);
}

TEST_F(ScenarioLoading, RootThatIsNotAnObjectIsRejected) {
  EXPECT_EQ(error_of_text("[1, 2]"), path_ + ": expected an object, found an array of 2 values");
}

TEST_F(ScenarioLoading, OffloadIsAcceptedAsPlacementOnly) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 2},
                                                {"offload_optimizer", {{"device", "cpu"}}}};
  const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
  ASSERT_EQ(loaded.deepspeed.warnings.size(), 1u);
  EXPECT_EQ(loaded.deepspeed.warnings[0],
            loaded.file +
                ":/deepspeed/zero_optimization/offload_optimizer: placement only: the reference "
                "engine keeps these tensors where they are, which changes no value; --engine "
                "deepspeed runs the offload itself");
  scenario["deepspeed"]["zero_optimization"]["offload_optimizer"]["devise"] = "cpu";
  // A typo inside the offload section is still DeepSpeed's refusal (pydantic forbids it).
  const Scenario typo = load_scenario(write("typo.json", scenario.dump()));
  ASSERT_TRUE(typo.deepspeed.refused_while_reading.has_value());
}

TEST_F(ScenarioLoading, UnimplementedDeepSpeedKeysBecomeWarnings) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["activation_checkpointing"] = {{"partition_activations", true}};
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 2}, {"overlap_comm", true}};
  scenario["deepspeed"]["steps_per_print"] = 10;  // no numerical effect: no warning
  const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
  ASSERT_EQ(loaded.deepspeed.warnings.size(), 2u);
  EXPECT_EQ(loaded.deepspeed.warnings[0].rfind(
                loaded.file + ":/deepspeed/zero_optimization/overlap_comm: ZeRO option not", 0),
            0u);
  EXPECT_EQ(
      loaded.deepspeed.warnings[1].rfind(loaded.file + ":/deepspeed/activation_checkpointing: "
                                                       "configures deepspeed.checkpointing.checkpoint, "
                                                       "which only the model's own code calls",
                                         0),
      0u);
  // Each layout option says what it would change here.
  EXPECT_NE(loaded.deepspeed.warnings[1].find(
                "; partition_activations splits each checkpointed input across the model-parallel "
                "ranks: these runs are data-parallel only"),
            std::string::npos);
  EXPECT_EQ(loaded.deepspeed.warnings[1].find("cpu_checkpointing"), std::string::npos);
  EXPECT_EQ(loaded.deepspeed.zero_stage, 2);
}

TEST_F(ScenarioLoading, DeepSpeedAdamDefaultsToDecoupledWeightDecay) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"]["optimizer"] = {{"type", "adam"}, {"params", {{"weight_decay", 0.01}}}};
  const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
  EXPECT_EQ(loaded.deepspeed.optimizer->kind, OptimizerKind::adam);
  EXPECT_TRUE(loaded.deepspeed.optimizer->decoupled_weight_decay);
  scenario["deepspeed"]["optimizer"]["params"]["adam_w_mode"] = false;
  const Scenario classic = load_scenario(write("s.json", scenario.dump()));
  EXPECT_FALSE(classic.deepspeed.optimizer->decoupled_weight_decay);
}

}  // namespace
}  // namespace trainrepro
