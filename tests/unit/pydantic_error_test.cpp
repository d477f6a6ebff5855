// DeepSpeed's pydantic config models refuse a section with one ValidationError that lists every
// problem, field errors first and forbidden keys in the order the file writes them. The
// expected texts are the real DeepSpeed 0.19.8's (pydantic 2.13, `DeepSpeedConfig(dict)`), each
// error's lines joined by ": " as tests/deepspeed_oracle/oracle.py reads them; only the
// parenthesis after them is trainrepro's.
#include <gtest/gtest.h>

#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/plan.h"
#include "scenario_file_fixture.h"

namespace trainrepro {
namespace {

// The refusal of a config file's text, read as DeepSpeed reads config files (hjson, in order).
std::string refusal_of(const std::string& text) {
  std::string note;
  const DeepSpeedRelease& release = *find_deepspeed_release("0.19.8", note);
  KeyOrder key_order;
  const nlohmann::json config =
      parse_json_text(text, "ds.json", JsonDialect::deepspeed_config, &key_order);
  const DeepSpeedConfig read = read_deepspeed_config(config, "ds.json", "", release, &key_order);
  const BatchResolution resolution = resolve_deepspeed_config(read, 1);
  const auto* error = std::get_if<ConfigError>(&resolution);
  return error ? error->message : "(accepted)";
}

const std::string kExtra = "Extra inputs are not permitted [type=extra_forbidden, ";

TEST(PydanticError, ListsEveryForbiddenKeyInTheFilesOrder) {
  // fp16's loss-scaler keys pasted under bf16 (DeepSpeedBF16Config forbids them), not sorted.
  EXPECT_EQ(refusal_of(R"({"train_batch_size": 4,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
      "bf16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 1000, "hysteresis": 2,
               "min_loss_scale": 1, "initial_scale_power": 16}})"),
            "5 validation errors for DeepSpeedBF16Config: loss_scale: " + kExtra +
                "input_value=0, input_type=int]: loss_scale_window: " + kExtra +
                "input_value=1000, input_type=int]: hysteresis: " + kExtra +
                "input_value=2, input_type=int]: min_loss_scale: " + kExtra +
                "input_value=1, input_type=int]: initial_scale_power: " + kExtra +
                "input_value=16, input_type=int] (at ds.json:/bf16/loss_scale, "
                "/bf16/loss_scale_window, /bf16/hysteresis, /bf16/min_loss_scale, "
                "/bf16/initial_scale_power; DeepSpeed 0.19.8 refuses any key its schema does not "
                "know)");
}

TEST(PydanticError, PutsFieldErrorsAndNestedModelsBeforeTheModelsOwnKeys) {
  EXPECT_EQ(refusal_of(R"({"train_batch_size": 4,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
      "zero_optimization": {"stage": 7, "zzz": 1, "aaa": 2}})"),
            "3 validation errors for DeepSpeedZeroConfig: stage: Input should be 0, 1, 2, 3 or 3 "
            "[type=enum, input_value=7, input_type=int]: zzz: " + kExtra +
                "input_value=1, input_type=int]: aaa: " + kExtra +
                "input_value=2, input_type=int] (DeepSpeed's maximum ZeRO stage is 3; at "
                "ds.json:/zero_optimization/zzz, /zero_optimization/aaa; DeepSpeed 0.19.8 refuses "
                "any key its schema does not know)");
  // offload_param is declared before offload_optimizer, whatever the file's order.
  const std::string nested = refusal_of(R"({"train_batch_size": 4,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
      "zero_optimization": {"zzz": 1, "stage": 2,
                            "offload_optimizer": {"device": "cpu", "qq": 1},
                            "offload_param": {"device": "cpu", "bb": 1}, "aaa": 2}})");
  EXPECT_EQ(nested.substr(0, nested.find(" (at ")),
            "4 validation errors for DeepSpeedZeroConfig: offload_param.bb: " + kExtra +
                "input_value=1, input_type=int]: offload_optimizer.qq: " + kExtra +
                "input_value=1, input_type=int]: zzz: " + kExtra +
                "input_value=1, input_type=int]: aaa: " + kExtra + "input_value=2, input_type=int]");
}

TEST(PydanticError, OneForbiddenKeyKeepsItsTypoHint) {
  EXPECT_EQ(refusal_of(R"({"train_batch_size": 4,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
      "zero_optimization": {"stage": 2, "overlap_com": true}})"),
            "1 validation error for DeepSpeedZeroConfig: overlap_com: " + kExtra +
                "input_value=True, input_type=bool] (at ds.json:/zero_optimization/overlap_com; "
                "DeepSpeed 0.19.8 refuses any key its schema does not know: did you mean "
                "\"overlap_comm\"?)");
}

class PydanticErrorInScenario : public ScenarioFileTest {};

// A scenario file keeps the pasted config's order too (its "deepspeed" object is read in order).
TEST_F(PydanticErrorInScenario, FollowsTheScenarioFilesOrder) {
  nlohmann::json scenario = valid_scenario();
  scenario.erase("deepspeed");
  std::string text = scenario.dump();
  text.insert(text.rfind('}'), R"(, "deepspeed": {"train_batch_size": 32,
      "train_micro_batch_size_per_gpu": 8,
      "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
      "fp16": {"enabled": false, "zz": 1, "aa": 2}})");
  const Scenario loaded = load_scenario(write("order.json", text));
  const PlanResolution resolution = resolve_plan(loaded, Device::cpu);
  ASSERT_TRUE(std::holds_alternative<ConfigError>(resolution));
  const std::string message = std::get<ConfigError>(resolution).message;
  EXPECT_EQ(message.substr(0, message.find(" (at ")),
            "2 validation errors for DeepSpeedFP16Config: zz: " + kExtra +
                "input_value=1, input_type=int]: aa: " + kExtra + "input_value=2, input_type=int]");
}

}  // namespace
}  // namespace trainrepro
