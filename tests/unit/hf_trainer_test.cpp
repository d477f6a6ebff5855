// The Hugging Face Trainer's side of a pasted config: "auto" filled as transformers 5.24.0 and
// accelerate 1.15.0 fill it, disagreements listed all at once, unknown "auto" refused, and a
// scenario without an optimizer trained with the client optimizer the script passes.
#include <gtest/gtest.h>

#include "harness/json/scenario_error.h"
#include "harness/scenario/hf_trainer.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/plan.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

// transformers' tests/deepspeed/ds_config_zero2.json, abridged: every kind of "auto".
nlohmann::json transformers_zero2() {
  return nlohmann::json::parse(R"({
    "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 16},
    "bf16": {"enabled": "auto"},
    "optimizer": {"type": "AdamW",
                  "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
    "scheduler": {"type": "WarmupDecayLR",
                  "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                             "warmup_num_steps": "auto", "total_num_steps": "auto"}},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"},
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto"
  })");
}

TEST(HfTrainer, FillsEveryAutoFromTrainingArguments) {
  HfTrainerArgs args;
  args.per_device_train_batch_size = 4;
  args.gradient_accumulation_steps = 3;
  args.learning_rate = 2e-4;
  args.warmup_steps = 0.25;  // below 1: a fraction of max_steps
  args.max_steps = 10;
  args.hidden_size = 64;
  const HfFilledConfig filled = fill_as_hf_trainer(transformers_zero2(), args, 2);
  EXPECT_TRUE(filled.mismatches.empty());
  EXPECT_TRUE(filled.unknown_autos.empty());
  const nlohmann::json& c = filled.config;
  EXPECT_EQ(c["train_micro_batch_size_per_gpu"], 4);
  EXPECT_EQ(c["gradient_accumulation_steps"], 3);
  EXPECT_EQ(c["train_batch_size"], 24);  // 2 ranks × 4 × 3
  EXPECT_EQ(c["gradient_clipping"], 1.0);
  EXPECT_EQ(c["optimizer"]["params"]["lr"], 2e-4);
  EXPECT_EQ(c["optimizer"]["params"]["betas"], nlohmann::json::array({0.9, 0.999}));
  EXPECT_EQ(c["optimizer"]["params"]["eps"], 1e-8);
  EXPECT_EQ(c["optimizer"]["params"]["weight_decay"], 0.0);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_min_lr"], 0);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_max_lr"], 2e-4);
  EXPECT_EQ(c["scheduler"]["params"]["total_num_steps"], 10);
  EXPECT_EQ(c["scheduler"]["params"]["warmup_num_steps"], 3);  // ceil(10 × 0.25)
  EXPECT_EQ(c["fp16"]["enabled"], false);
  EXPECT_EQ(c["bf16"]["enabled"], false);
  EXPECT_EQ(c["zero_optimization"]["reduce_bucket_size"], 64 * 64);
  EXPECT_EQ(filled.filled.size(), 15u);
}

// Without warm-up the Trainer still writes 1: DeepSpeed 0.19.3+ refuses 0.
TEST(HfTrainer, WarmupIsAtLeastOneStep) {
  HfTrainerArgs args;
  args.max_steps = 100;
  EXPECT_EQ(fill_as_hf_trainer(transformers_zero2(), args, 1)
                .config["scheduler"]["params"]["warmup_num_steps"],
            1);
  args.warmup_steps = 7;
  EXPECT_EQ(fill_as_hf_trainer(transformers_zero2(), args, 1)
                .config["scheduler"]["params"]["warmup_num_steps"],
            7);
}

// The Trainer compares with Python's !=: 1 == 1.0 == True agree; other values are listed all
// together (one ValueError at train()), and fill_only keys are never compared.
TEST(HfTrainer, ListsEveryDisagreementAtOnce) {
  nlohmann::json config = transformers_zero2();
  config["gradient_clipping"] = 1;             // == 1.0: agrees
  config["train_batch_size"] = 32;             // 8 at one rank with the defaults
  config["optimizer"]["params"]["lr"] = 1e-3;  // learning_rate 5e-5
  config["fp16"]["enabled"] = true;            // fp16 false
  config["scheduler"]["params"]["warmup_min_lr"] = 0.5;  // fill_only: never compared
  HfTrainerArgs args;
  args.max_steps = 4;
  args.hidden_size = 8;
  const HfFilledConfig filled = fill_as_hf_trainer(config, args, 1);
  ASSERT_EQ(filled.mismatches.size(), 3u);
  EXPECT_EQ(filled.mismatches[0],
            "/train_batch_size = 32, but world_size × per_device_train_batch_size × "
            "gradient_accumulation_steps = 1 × 8 × 1 = 8");
  EXPECT_EQ(filled.mismatches[1], "/optimizer/params/lr = 0.001, but learning_rate = 5e-05");
  EXPECT_EQ(filled.mismatches[2], "/fp16/enabled = true, but fp16 = false");
}

TEST(HfTrainer, AutoTheTrainerDoesNotKnowIsLeftForAccelerateToRefuse) {
  nlohmann::json config = transformers_zero2();
  config["zero_optimization"]["sub_group_size"] = "auto";
  config["steps_per_print"] = "auto";
  config["list"] = nlohmann::json::array({"auto"});  // accelerate walks objects, not lists
  HfTrainerArgs args;
  args.max_steps = 4;
  args.hidden_size = 8;
  const HfFilledConfig filled = fill_as_hf_trainer(config, args, 1);
  EXPECT_EQ(filled.unknown_autos,
            (std::vector<std::string>{"/steps_per_print", "/zero_optimization/sub_group_size"}));
}

// Parents are never created; accelerate inserts GAS 1 where the config has none (which decides
// nothing under accelerate 1.15.0: the Trainer hands DeepSpeed its own boundary) and a block for
// a precision flag.
TEST(HfTrainer, CreatesNothingButWhatAccelerateInserts) {
  const nlohmann::json config = {{"train_micro_batch_size_per_gpu", "auto"}};
  HfTrainerArgs args;
  args.bf16 = true;
  args.gradient_accumulation_steps = 4;
  args.max_steps = 4;
  args.hidden_size = 8;
  const HfFilledConfig filled = fill_as_hf_trainer(config, args, 1);
  EXPECT_EQ(filled.config, nlohmann::json({{"train_micro_batch_size_per_gpu", 8},
                                           {"gradient_accumulation_steps", 1},
                                           {"bf16", {{"enabled", true}}}}));
  ASSERT_EQ(filled.inserted.size(), 2u);
  EXPECT_NE(filled.inserted[0].find("It decides nothing here: the Trainer counts its own window "
                                    "of 4 micro-batches and accelerate 1.15.0 passes that "
                                    "boundary to DeepSpeed"),
            std::string::npos)
      << filled.inserted[0];
  EXPECT_NE(filled.boundary.find("an optimizer step every 4 micro-batches, whatever "
                                 "gradient_accumulation_steps DeepSpeed resolves"),
            std::string::npos)
      << filled.boundary;
}

// accelerate before 1.8.0 calls engine.step() after every backward: the GAS 1 it inserts is
// then DeepSpeed's boundary, and the Trainer's 4 only divides the loss.
TEST(HfTrainer, InsertedGasIsTheBoundaryBeforeAccelerate18) {
  const nlohmann::json config = {{"train_micro_batch_size_per_gpu", "auto"},
                                 {"zero_optimization", {{"stage", 0}}}};
  HfTrainerArgs args;
  args.gradient_accumulation_steps = 4;
  args.max_steps = 4;
  args.hidden_size = 8;
  args.accelerate = *find_accelerate_release("1.7.0");
  const HfFilledConfig filled = fill_as_hf_trainer(config, args, 1);
  EXPECT_EQ(filled.config["gradient_accumulation_steps"], 1);
  ASSERT_EQ(filled.inserted.size(), 1u);
  EXPECT_NE(filled.inserted[0].find("accelerate 1.7.0 calls engine.step() after every backward, "
                                    "so DeepSpeed's 1 makes every micro-batch a boundary"),
            std::string::npos)
      << filled.inserted[0];
  EXPECT_NE(filled.boundary.find("DeepSpeed's gradient_accumulation_steps (1) decides the "
                                 "boundary, while the Trainer divides the loss by its own 4"),
            std::string::npos)
      << filled.boundary;
  const TrainerLoopSpec loop = trainer_loop_of(args);
  EXPECT_EQ(loop.gradient_accumulation_steps, 4);
  EXPECT_FALSE(loop.explicit_boundary);
  EXPECT_EQ(loop.accelerate_version, "1.7.0");
}

// DeepSpeedEngineWrapper.backward read in each wheel: the explicit boundary arrives in 1.8.0.
TEST(HfTrainer, AccelerateReleasesPassTheBoundaryFrom18) {
  ASSERT_NE(find_accelerate_release("1.7.0"), nullptr);
  EXPECT_FALSE(find_accelerate_release("1.7.0")->passes_explicit_boundary);
  EXPECT_TRUE(find_accelerate_release("1.8.0")->passes_explicit_boundary);
  EXPECT_TRUE(find_accelerate_release("1.15.0")->passes_explicit_boundary);
  EXPECT_EQ(newest_accelerate_release().version, "1.15.0");
  EXPECT_EQ(find_accelerate_release("1.6.0"), nullptr);
  EXPECT_EQ(describe_known_accelerate_releases(), "1.7.0, 1.8.0, 1.15.0");
}

TEST(HfTrainer, DescribesEveryAutoWithTheTrainersDefault) {
  const std::string message = describe_auto_values(transformers_zero2(), 2);
  EXPECT_EQ(message.rfind("15 values are \"auto\", which the Hugging Face Trainer fills in", 0),
            0u)
      << message;
  EXPECT_NE(message.find("/train_batch_size = 16 from world_size × per_device_train_batch_size × "
                         "gradient_accumulation_steps = 2 × 8 × 1"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("/gradient_clipping = 1.0 from max_grad_norm"), std::string::npos);
  EXPECT_NE(message.find("/scheduler/params/total_num_steps from max_steps"), std::string::npos);
}

class HfTrainerScenario : public ScenarioFileTest {
 protected:
  std::string error_of(const nlohmann::json& scenario) {
    try {
      load_scenario(write("s.json", scenario.dump()));
    } catch (const ScenarioError& error) {
      return error.what();
    }
    return "";
  }
};

TEST_F(HfTrainerScenario, SectionFillsTheConfigAndKeepsItVerbatim) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"] = transformers_zero2();
  scenario["deepspeed"]["optimizer"]["type"] = "AdamW";
  scenario["hf_trainer"] = {{"per_device_train_batch_size", 4},
                            {"gradient_accumulation_steps", 8},
                            {"learning_rate", 1e-3}};
  scenario["golden"]["train_batch_size"] = 32;
  const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
  EXPECT_EQ(loaded.deepspeed.batch.micro_batch_per_gpu, 4);
  EXPECT_EQ(loaded.deepspeed.batch.gradient_accumulation_steps, 8);
  EXPECT_EQ(loaded.deepspeed.optimizer->lr, 1e-3);
  EXPECT_EQ(loaded.deepspeed.gradient_clipping, 1.0);
  EXPECT_EQ(loaded.deepspeed.verbatim["train_batch_size"], "auto");
}

TEST_F(HfTrainerScenario, WithoutTheSectionEveryAutoIsNamedAtOnce) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"] = transformers_zero2();
  const std::string error = error_of(scenario);
  EXPECT_NE(error.find("s.json:/deepspeed/bf16/enabled: 15 values are \"auto\""),
            std::string::npos)
      << error;
}

TEST_F(HfTrainerScenario, DisagreementIsTheTrainersError) {
  nlohmann::json scenario = valid_scenario();
  scenario["hf_trainer"] = {{"per_device_train_batch_size", 8}};
  EXPECT_NE(error_of(scenario).find("s.json:/deepspeed: accelerate (1.15.0, under the Hugging Face "
                                    "Trainer) refuses a DeepSpeed config without "
                                    "\"zero_optimization\""),
            std::string::npos)
      << error_of(scenario);
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 0}};
  // valid_scenario has train_batch_size 32 with micro batch 8: GAS 4 in DeepSpeed, 1 in the
  // Trainer's arguments; lr 0.001 against the default learning_rate. Keys the config does not
  // have (gradient_clipping) are not compared.
  const std::string error = error_of(scenario);
  EXPECT_NE(error.find("s.json:/deepspeed/train_batch_size: the Hugging Face Trainer "
                       "(transformers 5.24.0) refuses this config at train(): 2 values disagree "
                       "with \"hf_trainer\" (TrainingArguments); set them to \"auto\" or change "
                       "hf_trainer: /deepspeed/train_batch_size = 32, but world_size × "
                       "per_device_train_batch_size × gradient_accumulation_steps = 1 × 8 × 1 = 8; "
                       "/deepspeed/optimizer/params/lr = 0.001, but learning_rate = 5e-05"),
            std::string::npos)
      << error;
}

// The ChatGLM config without a gradient_accumulation_steps key, under a Trainer with GAS 4.
nlohmann::json without_gas_key(const char* accelerate) {
  nlohmann::json scenario = nlohmann::json::parse(R"({
    "name": "valid", "description": "d",
    "model": {"name": "mlp", "options": {"dims": [16, 8, 4]}, "seed": 1},
    "data": {"name": "classification", "options": {"features": 16, "classes": 4}, "seed": 2},
    "deepspeed": {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 1}},
    "hf_trainer": {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4},
    "golden": {"train_batch_size": 8}, "expect": {"outcome": "pass"}
  })");
  scenario["hf_trainer"]["accelerate_version"] = accelerate;
  return scenario;
}

TEST_F(HfTrainerScenario, AccelerateReleaseDecidesWhoHoldsTheBoundary) {
  for (const char* release : {"1.7.0", "1.15.0"}) {
    const Scenario loaded = load_scenario(write("s.json", without_gas_key(release).dump()));
    ASSERT_TRUE(loaded.trainer.has_value());
    EXPECT_EQ(loaded.trainer->gradient_accumulation_steps, 4);
    EXPECT_EQ(loaded.trainer->accelerate_version, release);
    const Plan plan = std::get<Plan>(resolve_plan(loaded, Device::cpu));
    EXPECT_EQ(plan.batch.gradient_accumulation_steps, 1);  // what DeepSpeed resolves
    EXPECT_EQ(plan.batch.train_batch_size, 2);
    const bool explicit_boundary = std::string(release) == "1.15.0";
    EXPECT_EQ(plan.trainer->explicit_boundary, explicit_boundary);
    EXPECT_EQ(micro_batches_per_window(plan), 4);  // the Trainer counts its window either way
    EXPECT_EQ(accumulation_window(plan), explicit_boundary ? 4 : 1);
    EXPECT_EQ(effective_train_batch(plan), explicit_boundary ? 8 : 2);
  }
}

TEST_F(HfTrainerScenario, UnknownAccelerateReleaseNamesTheKnownOnes) {
  EXPECT_NE(error_of(without_gas_key("1.6.0"))
                .find("s.json:/hf_trainer/accelerate_version: expected an accelerate release this "
                      "harness knows (1.7.0, 1.8.0, 1.15.0), found \"1.6.0\""),
            std::string::npos)
      << error_of(without_gas_key("1.6.0"));
}

// The Trainer zeroes, clips, steps and syncs itself: habits of a loop of one's own are refused.
TEST_F(HfTrainerScenario, HabitsOfAnOwnLoopAreRefused) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"zero_grad", "every_micro_step"},
           {"stepping", "once_per_window"},
           {"gradient_sync", "never"},
           {"clip_grad_norm", 1.0},
           {"evaluation", {{"no_grad", false}, {"backward", true}}}}) {
    nlohmann::json scenario = without_gas_key("1.15.0");
    scenario["loop"] = {{key, value}};
    EXPECT_NE(error_of(scenario).find("s.json:/loop/" + key +
                                      ": the Hugging Face Trainer runs the training loop"),
              std::string::npos)
        << error_of(scenario);
  }
  nlohmann::json scenario = without_gas_key("1.15.0");
  scenario["loop"] = {{"token_normalisation", "per_micro_batch"}, {"keep", "loss_item"}};
  EXPECT_EQ(error_of(scenario), "");
}

// accelerate 1.8.0+ calls set_gradient_accumulation_boundary before the first backward, which
// DeepSpeed 0.19.4+ asserts against unmanaged accumulation; before 1.8.0 nothing asserts.
TEST_F(HfTrainerScenario, BoundaryWithUnmanagedAccumulationIsRefused) {
  nlohmann::json scenario = without_gas_key("1.15.0");
  scenario["deepspeed"]["managed_gradient_accumulation"] = false;
  scenario["expect"] = {{"outcome", "config_error"},
                        {"error", "boundary_with_unmanaged_accumulation"}};
  const PlanResolution refused =
      resolve_plan(load_scenario(write("s.json", scenario.dump())), Device::cpu);
  ASSERT_TRUE(std::holds_alternative<ConfigError>(refused));
  const ConfigError& error = std::get<ConfigError>(refused);
  EXPECT_EQ(error.kind, ConfigErrorKind::boundary_with_unmanaged_accumulation);
  EXPECT_EQ(error.message.rfind("AssertionError: set_gradient_accumulation_boundary() is not "
                                "supported with managed_gradient_accumulation=False; the caller "
                                "owns the boundary by calling step()",
                                0),
            0u)
      << error.message;
  scenario["hf_trainer"]["accelerate_version"] = "1.7.0";
  EXPECT_TRUE(std::holds_alternative<Plan>(
      resolve_plan(load_scenario(write("s.json", scenario.dump())), Device::cpu)));
}

// No optimizer in the config: a client optimizer (torch's defaults) or the Trainer's AdamW.
TEST_F(HfTrainerScenario, ClientOptimizerTrainsAConfigWithoutOne) {
  nlohmann::json scenario = valid_scenario();
  scenario["deepspeed"].erase("optimizer");
  // The message names the section and the `new` option that writes it.
  EXPECT_NE(error_of(scenario).find("describe it: `trainrepro new --client-optimizer 'AdamW "
                                    "lr=0.001'`, or a \"client_optimizer\" section"),
            std::string::npos)
      << error_of(scenario);

  scenario["client_optimizer"] = {{"type", "AdamW"}, {"params", {{"lr", 0.01}}}};
  Scenario loaded = load_scenario(write("s.json", scenario.dump()));
  EXPECT_EQ(loaded.deepspeed.optimizer->kind, OptimizerKind::adamw);
  EXPECT_EQ(loaded.deepspeed.optimizer->weight_decay, 0.01);  // torch.optim.AdamW's default
  EXPECT_EQ(loaded.deepspeed.optimizer->lr, 0.01);

  scenario["client_optimizer"] = {{"type", "Adam"}};
  loaded = load_scenario(write("s.json", scenario.dump()));
  EXPECT_FALSE(loaded.deepspeed.optimizer->decoupled_weight_decay);  // torch Adam: L2

  scenario["client_optimizer"] = {{"type", "adamw"}};
  EXPECT_NE(error_of(scenario).find("/client_optimizer/type: expected a torch.optim class"),
            std::string::npos)
      << error_of(scenario);

  // The client's wins over the config's, silently in DeepSpeed, with a warning here.
  scenario = valid_scenario();
  scenario["client_optimizer"] = {{"type", "SGD"}, {"params", {{"lr", 0.1}}}};
  loaded = load_scenario(write("s.json", scenario.dump()));
  EXPECT_EQ(loaded.deepspeed.optimizer->kind, OptimizerKind::sgd);
  bool warned = false;
  for (const std::string& warning : loaded.deepspeed.warnings) {
    warned = warned || warning.find("/deepspeed/optimizer: ignored: DeepSpeed uses the client "
                                    "optimizer") != std::string::npos;
  }
  EXPECT_TRUE(warned);

  // With hf_trainer and no config optimizer, the Trainer's own AdamW, allowed under ZeRO.
  scenario = valid_scenario();
  scenario["deepspeed"].erase("optimizer");
  scenario["deepspeed"]["zero_optimization"] = {{"stage", 1}};
  scenario["deepspeed"]["train_batch_size"] = 8;
  scenario["golden"]["train_batch_size"] = 8;
  scenario["hf_trainer"] = {{"learning_rate", 3e-4}};
  loaded = load_scenario(write("s.json", scenario.dump()));
  EXPECT_EQ(loaded.deepspeed.optimizer->kind, OptimizerKind::adamw);
  EXPECT_EQ(loaded.deepspeed.optimizer->lr, 3e-4);
  EXPECT_EQ(loaded.deepspeed.optimizer->weight_decay, 0.0);
  EXPECT_TRUE(loaded.deepspeed.zero_allow_untested_optimizer);
}

}  // namespace
}  // namespace trainrepro
