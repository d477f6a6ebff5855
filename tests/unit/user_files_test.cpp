// A user's own samples (data "safetensors"), model (model "torchscript") and a catalogue entry's
// "reference": what each kind of file becomes, and for every bad one an error at its pointer
// that names the file and says what was expected and found.
#include <gtest/gtest.h>

#include <algorithm>

#include <ATen/ATen.h>

#include "harness/files/safetensors.h"
#include "harness/json/scenario_error.h"
#include "harness/scenario/load_scenario.h"
#include "models/sample_source.h"
#include "models/zoo_model.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class UserFiles : public ScenarioFileTest {
 protected:
  // A scenario whose data is `tensors` written as samples.safetensors beside it.
  nlohmann::json with_samples(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const nlohmann::json& model) {
    write_safetensors((directory_ / "samples.safetensors").string(), tensors);
    nlohmann::json scenario = valid_scenario();
    scenario["model"] = model;
    scenario["data"] = {{"name", "safetensors"}, {"options", {{"file", "samples.safetensors"}}}};
    return scenario;
  }

  Scenario load(const nlohmann::json& scenario) {
    return load_scenario(write("scenario.json", scenario.dump(2)));
  }

  std::string error_of(const nlohmann::json& scenario) {
    try {
      load(scenario);
    } catch (const ScenarioError& error) {
      return error.what();
    }
    return "";
  }

  static nlohmann::json mlp(std::vector<int64_t> dims) {
    return {{"name", "mlp"}, {"options", {{"dims", dims}}}, {"seed", 1}};
  }
};

TEST_F(UserFiles, ClassificationSamplesRepeatInFileOrder) {
  const at::Tensor inputs = at::arange(15, at::kFloat).reshape({5, 3});
  const at::Tensor targets = at::tensor({0, 2, 1, 2, 0}, at::kLong);
  const Scenario scenario = load(with_samples({{"inputs", inputs}, {"targets", targets}},
                                              mlp({3, 8, 3})));
  const auto& data = std::get<SafetensorsData>(scenario.data.options);
  EXPECT_EQ(data.kind, SampleFileKind::classification);
  EXPECT_EQ(data.samples, 5);
  EXPECT_EQ(data.classes_needed, 3);
  EXPECT_EQ(data.sha256.size(), 64u);
  const Batch batch = SampleSource(scenario.data).samples(3, 8, at::kDouble, at::kCPU);
  // Rows 3, 4, then 0, 1, 2 again: epochs in file order.
  EXPECT_TRUE(batch.inputs.equal(at::cat({inputs.narrow(0, 3, 2), inputs.narrow(0, 0, 3)})
                                     .to(at::kDouble)));
  EXPECT_TRUE(batch.targets.equal(at::tensor({2, 0, 0, 2, 1}, at::kLong)));
  EXPECT_EQ(batch.items, 5);
}

TEST_F(UserFiles, TokenTargetsCountWhereMaskedInAndNotIgnored) {
  const at::Tensor inputs = at::tensor({3, 4, 5, 0, 6, 7, 0, 0}, at::kLong).reshape({2, 4});
  const at::Tensor targets = at::tensor({4, 5, -100, -100, 7, 9, 2, -100}, at::kLong).reshape({2, 4});
  const at::Tensor attention = at::tensor({1, 1, 1, 0, 1, 1, 0, 0}, at::kLong).reshape({2, 4});
  nlohmann::json gpt = {{"name", "gpt"}, {"options", {{"vocab_size", 10}, {"max_seq_len", 4}}}};
  const Scenario scenario = load(with_samples(
      {{"inputs", inputs}, {"targets", targets}, {"attention_mask", attention}}, gpt));
  const auto& data = std::get<SafetensorsData>(scenario.data.options);
  EXPECT_EQ(data.kind, SampleFileKind::tokens);
  EXPECT_EQ(data.vocab_needed, 10);
  const Batch batch = SampleSource(scenario.data).samples(0, 2, at::kFloat, at::kCPU);
  // Counted: row 0 positions 0-1 (2 is -100), row 1 positions 0-1 (2 is masked out).
  EXPECT_EQ(batch.items, 4);
  EXPECT_TRUE(batch.targets.equal(
      at::tensor({4, 5, 0, 0, 7, 9, 0, 0}, at::kLong).reshape({2, 4})));
  // A vocabulary too small for the file's ids is refused where it is set.
  gpt["options"]["vocab_size"] = 9;
  EXPECT_NE(error_of(with_samples({{"inputs", inputs}, {"targets", targets},
                                   {"attention_mask", attention}}, gpt))
                .find("/model/options/vocab_size: vocab_size (9) must exceed the largest token "
                      "id in the file (9)"),
            std::string::npos);
}

TEST_F(UserFiles, BadSampleFilesAreRefusedAtTheirKey) {
  const at::Tensor features = at::randn({4, 3});
  const at::Tensor labels = at::tensor({0, 1, 2, 1}, at::kLong);
  const auto refused = [&](const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                           const std::string& needle) {
    const std::string error = error_of(with_samples(tensors, mlp({3, 8, 3})));
    EXPECT_NE(error.find("scenario.json:/data/options/file: "), std::string::npos) << error;
    EXPECT_NE(error.find(needle), std::string::npos) << error;
  };
  refused({{"input_ids", features}, {"labels", labels}}, "unknown tensor \"input_ids\"");
  refused({{"inputs", features}}, "expected tensors \"inputs\" and \"targets\"");
  refused({{"inputs", features}, {"targets", labels.narrow(0, 0, 3)}},
          "one row per sample (4)");
  refused({{"inputs", features}, {"targets", at::tensor({0, -1, 2, 1}, at::kLong)}},
          "class ids in \"targets\" must be >= 0, found -1");
  refused({{"inputs", features.index_put({at::tensor({1}, at::kLong)}, at::tensor(NAN))},
           {"targets", labels}},
          "\"inputs\" holds NaN or Inf");
  refused({{"inputs", features}, {"targets", labels}, {"attention_mask", labels}},
          "\"attention_mask\" belongs to token data");
  const at::Tensor ids = at::ones({4, 3}, at::kLong);
  refused({{"inputs", ids}, {"targets", ids}, {"attention_mask", 2 * ids}},
          "\"attention_mask\" must hold only 0 and 1");
  // Not a safetensors file at all, and no file.
  write("samples.safetensors", "not safetensors");
  nlohmann::json scenario = valid_scenario();
  scenario["data"] = {{"name", "safetensors"}, {"options", {{"file", "samples.safetensors"}}}};
  EXPECT_NE(error_of(scenario).find("/data/options/file: expected a safetensors file, found: "),
            std::string::npos);
  scenario["data"]["options"]["file"] = "absent.safetensors";
  EXPECT_NE(error_of(scenario).find("no such file at "), std::string::npos);
  // A seed would change nothing: refused, not ignored.
  scenario = with_samples({{"inputs", features}, {"targets", labels}}, mlp({3, 8, 3}));
  scenario["data"]["seed"] = 3;
  EXPECT_NE(error_of(scenario).find("scenario.json:/data/seed: \"safetensors\" reads its values "
                                    "from your file"),
            std::string::npos);
}

TEST_F(UserFiles, TorchScriptModelMirrorsTheFilesParameters) {
  // The shipped scripted classifier (scenarios/user-models/generate.py).
  const std::string shipped = std::string(TRAINREPRO_SOURCE_DIR) + "/scenarios/user-models/";
  const Scenario scenario = load_scenario(shipped + "user-classifier-gas4.json");
  const auto& options = std::get<TorchScriptOptions>(scenario.model.options);
  EXPECT_EQ(options.parameter_names,
            (std::vector<std::string>{"encoder.weight", "encoder.bias", "norm.weight", "norm.bias",
                                      "head.weight", "head.bias"}));
  EXPECT_EQ(options.parameter_count, 10 * 24 + 24 + 24 + 24 + 24 * 5 + 5);
  EXPECT_TRUE(options.fixed_dtype_conversions.empty());
  ModelSpec frozen = scenario.model;
  frozen.frozen = {"encoder"};
  const std::shared_ptr<ZooModel> model = build_model(frozen, at::kFloat, at::kCPU);
  std::vector<std::string> names;
  for (const auto& [name, parameter] : model->trainable_named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"norm.weight", "norm.bias", "head.weight",
                                             "head.bias"}));
  EXPECT_EQ(model->frozen_parameters().size(), 2u);
  // The GPT-2 traced from a config ties its embedding and head: one parameter, named once;
  // its graph casts the position embeddings to float32 (a warning for float64 runs).
  const Scenario gpt2 = load_scenario(shipped + "user-gpt2-tokens.json");
  const auto& gpt2_options = std::get<TorchScriptOptions>(gpt2.model.options);
  EXPECT_EQ(std::count(gpt2_options.parameter_names.begin(), gpt2_options.parameter_names.end(),
                       "model.lm_head.weight"),
            0);
  EXPECT_NE(gpt2_options.fixed_dtype_conversions.find("aten::to to Float"), std::string::npos);
}

TEST_F(UserFiles, TorchScriptFilesThatCannotTrainAreRefused) {
  nlohmann::json scenario = valid_scenario();
  write("model.pt", "not a model");
  scenario["model"] = {{"name", "torchscript"}, {"options", {{"file", "model.pt"}}}};
  EXPECT_NE(error_of(scenario).find("/model/options/file: " + (directory_ / "model.pt").string() +
                                    ": not a TorchScript module torch.jit.load can read"),
            std::string::npos);
  const std::string shipped =
      std::string(TRAINREPRO_SOURCE_DIR) + "/scenarios/user-models/classifier.pt";
  scenario["model"] = {{"name", "torchscript"}, {"options", {{"file", shipped}}}, {"seed", 1}};
  EXPECT_NE(error_of(scenario).find("/model/seed: \"torchscript\" reads its values from your "
                                    "file"),
            std::string::npos);
}

TEST_F(UserFiles, ReferenceNeedsEveryField) {
  nlohmann::json scenario = valid_scenario();
  scenario["reference"] = {{"url", "https://github.com/deepspeedai/DeepSpeed/pull/7969"},
                           {"project", "deepspeed"},
                           {"affected", "0.16.9"},
                           {"fixed", "0.19.0"}};
  const Scenario loaded = load(scenario);
  ASSERT_TRUE(loaded.reference.has_value());
  EXPECT_EQ(loaded.reference->fixed, "0.19.0");
  scenario["reference"]["url"] = "github.com/x";
  EXPECT_NE(error_of(scenario).find("/reference/url: expected the https:// address"),
            std::string::npos);
  scenario["reference"]["url"] = "https://github.com/x";
  scenario["reference"]["project"] = "megatron";
  EXPECT_NE(error_of(scenario).find("/reference/project: expected one of"), std::string::npos);
  scenario["reference"]["project"] = "deepspeed";
  scenario["reference"].erase("fixed");
  EXPECT_NE(error_of(scenario).find("/reference/fixed"), std::string::npos);
  scenario["reference"]["fixed"] = "0.19.0";
  scenario["reference"]["affects"] = "typo";
  EXPECT_NE(error_of(scenario).find("/reference/affects"), std::string::npos);
}

}  // namespace
}  // namespace trainrepro
