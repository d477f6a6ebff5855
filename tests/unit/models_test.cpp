// The model zoo's modules and the data generators: exact parameter names (they key golden files),
// deterministic initialisation and samples, and the loss semantics the golden relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "models/parameter_names.h"
#include "models/gpt_model.h"
#include "models/mlp_model.h"
#include "models/sample_source.h"
#include "models/zoo_model.h"

namespace trainrepro {
namespace {

const at::Device kCpu(at::kCPU);

DataSpec classification_data(int64_t seed = 0) {
  return {"classification", ClassificationData{}, seed};
}
DataSpec regression_data(int64_t seed = 0) { return {"regression", RegressionData{}, seed}; }
DataSpec token_data(int64_t seed = 0) { return {"token_sequences", TokenSequenceData{}, seed}; }

ModelSpec mlp_spec(std::vector<int64_t> dims = {16, 64, 4}, int64_t seed = 0) {
  MlpOptions options;
  options.dims = std::move(dims);
  return {{"mlp", options, seed}};
}

ModelSpec gpt_spec(int64_t layers = 2, int64_t seed = 0) {
  GptOptions options;
  options.layers = layers;
  return {{"gpt", options, seed}};
}

std::vector<std::string> parameter_names(const ZooModel& model) {
  std::vector<std::string> names;
  for (const auto& parameter : model.named_parameters()) names.push_back(parameter.key());
  return names;
}

void expect_same_parameters(const ZooModel& a, const ZooModel& b) {
  const auto a_parameters = a.named_parameters();
  const auto b_parameters = b.named_parameters();
  ASSERT_EQ(a_parameters.size(), b_parameters.size());
  for (size_t i = 0; i < a_parameters.size(); ++i) {
    EXPECT_EQ(a_parameters[i].key(), b_parameters[i].key());
    EXPECT_TRUE(a_parameters[i].value().equal(b_parameters[i].value())) << a_parameters[i].key();
  }
}

void expect_same_batch(const Batch& a, const Batch& b) {
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.items, b.items);
  EXPECT_TRUE(a.inputs.equal(b.inputs));
  EXPECT_TRUE(a.targets.equal(b.targets));
  ASSERT_EQ(a.mask.defined(), b.mask.defined());
  if (a.mask.defined()) {
    EXPECT_TRUE(a.mask.equal(b.mask));
  }
}

Batch concat(const Batch& a, const Batch& b) {
  Batch batch;
  batch.inputs = at::cat({a.inputs, b.inputs});
  batch.targets = at::cat({a.targets, b.targets});
  if (a.mask.defined()) batch.mask = at::cat({a.mask, b.mask});
  batch.samples = a.samples + b.samples;
  batch.items = a.items + b.items;
  return batch;
}

// ---- SampleSource ----

TEST(SampleSource, SampleIsTheSameWhateverRangeAsksForIt) {
  for (const DataSpec& spec : {classification_data(3), regression_data(3), token_data(3)}) {
    SCOPED_TRACE(spec.name);
    const SampleSource source(spec);
    const Batch whole = source.samples(0, 200, at::kDouble, kCpu);
    // Ranges that start and end inside chunks, and span a chunk boundary (64, 128).
    const Batch head = source.samples(0, 50, at::kDouble, kCpu);
    const Batch middle = source.samples(50, 130, at::kDouble, kCpu);
    const Batch tail = source.samples(130, 200, at::kDouble, kCpu);
    expect_same_batch(concat(concat(head, middle), tail), whole);
    const Batch single = source.samples(70, 71, at::kDouble, kCpu);
    EXPECT_TRUE(single.inputs.equal(whole.inputs.narrow(0, 70, 1)));
    EXPECT_TRUE(single.targets.equal(whole.targets.narrow(0, 70, 1)));
  }
}

TEST(SampleSource, SameSeedSameSamplesOtherSeedOtherSamples) {
  for (const auto& [spec, other] : {std::pair{classification_data(1), classification_data(2)},
                                    std::pair{regression_data(1), regression_data(2)},
                                    std::pair{token_data(1), token_data(2)}}) {
    SCOPED_TRACE(spec.name);
    const Batch a = SampleSource(spec).samples(10, 90, at::kDouble, kCpu);
    expect_same_batch(a, SampleSource(spec).samples(10, 90, at::kDouble, kCpu));
    EXPECT_FALSE(a.inputs.equal(SampleSource(other).samples(10, 90, at::kDouble, kCpu).inputs));
  }
}

TEST(SampleSource, FloatingTensorsTakeTheRequestedDtypeAndLabelsStayInt64) {
  const SampleSource classification(classification_data());
  const Batch wide = classification.samples(0, 20, at::kDouble, kCpu);
  const Batch narrow = classification.samples(0, 20, at::kFloat, kCpu);
  EXPECT_EQ(narrow.inputs.scalar_type(), at::kFloat);
  EXPECT_EQ(narrow.targets.scalar_type(), at::kLong);
  EXPECT_TRUE(narrow.inputs.equal(wide.inputs.to(at::kFloat)));
  EXPECT_FALSE(narrow.mask.defined());
  EXPECT_EQ(narrow.items, 20);

  const Batch regression = SampleSource(regression_data()).samples(0, 20, at::kFloat, kCpu);
  EXPECT_EQ(regression.targets.scalar_type(), at::kFloat);
  EXPECT_EQ(regression.targets.sizes(), (std::vector<int64_t>{20, 1}));
}

TEST(SampleSource, ClassificationLabelsAreClassIds) {
  const Batch batch = SampleSource(classification_data()).samples(0, 128, at::kDouble, kCpu);
  EXPECT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{128, 16}));
  EXPECT_EQ(batch.targets.sizes(), (std::vector<int64_t>{128}));
  EXPECT_GE(batch.targets.min().item<int64_t>(), 0);
  EXPECT_LT(batch.targets.max().item<int64_t>(), 4);
}

TEST(SampleSource, NoiselessRegressionFollowsOneLinearTeacherAcrossChunks) {
  DataSpec spec = regression_data(5);
  std::get<RegressionData>(spec.options).noise = 0.0;
  const Batch batch = SampleSource(spec).samples(0, 192, at::kDouble, kCpu);      // three chunks
  const at::Tensor fitted = at::linalg_pinv(batch.inputs).matmul(batch.targets);  // (F, O)
  EXPECT_LT((batch.inputs.matmul(fitted) - batch.targets).abs().max().item<double>(), 1e-9);
}

TEST(SampleSource, TokenMaskCoversEachSequenceButItsLastTokenAndTargetsAreNextTokens) {
  const Batch batch = SampleSource(token_data()).samples(30, 130, at::kDouble, kCpu);
  ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{100, 16}));
  EXPECT_EQ(batch.inputs.scalar_type(), at::kLong);
  EXPECT_EQ(batch.targets.scalar_type(), at::kLong);
  EXPECT_EQ(batch.mask.scalar_type(), at::kBool);
  const at::Tensor positions = at::arange(16, at::kLong);
  const at::Tensor lengths = batch.inputs.ne(0).sum(/*dim=*/1);  // (N)
  EXPECT_GE(lengths.min().item<int64_t>(), 2);
  EXPECT_LE(lengths.max().item<int64_t>(), 16);
  EXPECT_LT(lengths.min().item<int64_t>(), lengths.max().item<int64_t>()) << "lengths vary";
  // Tokens form a prefix: everything after the first padding is padding.
  EXPECT_TRUE(batch.inputs.ne(0).equal(positions.lt(lengths.unsqueeze(1))));
  EXPECT_LT(batch.inputs.max().item<int64_t>(), 64);
  EXPECT_TRUE(batch.mask.equal(positions.lt(lengths.unsqueeze(1) - 1)));
  const at::Tensor next_inputs =
      at::cat({batch.inputs.narrow(1, 1, 15), at::zeros({100, 1}, at::kLong)}, 1);
  EXPECT_TRUE(batch.targets.equal(next_inputs.masked_fill(batch.mask.logical_not(), 0)));
  EXPECT_EQ(batch.items, batch.mask.sum().item<int64_t>());
  EXPECT_EQ(batch.samples, 100);
}

TEST(SampleSource, TokenItemsCountOnlyTheReturnedSamples) {
  const SampleSource source(token_data());
  const Batch whole = source.samples(0, 100, at::kDouble, kCpu);
  EXPECT_EQ(source.samples(0, 40, at::kDouble, kCpu).items +
                source.samples(40, 100, at::kDouble, kCpu).items,
            whole.items);
}

TEST(SampleSource, MismatchedNameAndOptionsAreRejected) {
  EXPECT_THROW(SampleSource({"regression", ClassificationData{}, 0}), std::invalid_argument);
}

// ---- parameter names ----

TEST(MlpModel, ParametersAreNamedByLayerWithOutInShapes) {
  const auto model = build_model(mlp_spec({16, 64, 4}), at::kDouble, kCpu);
  const auto parameters = model->named_parameters();
  ASSERT_EQ(parameter_names(*model),
            (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight",
                                      "layers.1.bias"}));
  EXPECT_EQ(parameters["layers.0.weight"].sizes(), (std::vector<int64_t>{64, 16}));
  EXPECT_EQ(parameters["layers.0.bias"].sizes(), (std::vector<int64_t>{64}));
  EXPECT_EQ(parameters["layers.1.weight"].sizes(), (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(parameters["layers.1.bias"].sizes(), (std::vector<int64_t>{4}));
}

TEST(GptModel, ParametersAreNamedInRegistrationOrder) {
  const auto model = build_model(gpt_spec(/*layers=*/1), at::kDouble, kCpu);
  EXPECT_EQ(parameter_names(*model),
            (std::vector<std::string>{
                "token_embedding.weight", "position_embedding.weight", "blocks.0.ln1.weight",
                "blocks.0.ln1.bias", "blocks.0.attn_qkv.weight", "blocks.0.attn_qkv.bias",
                "blocks.0.attn_out.weight", "blocks.0.attn_out.bias", "blocks.0.ln2.weight",
                "blocks.0.ln2.bias", "blocks.0.mlp_in.weight", "blocks.0.mlp_in.bias",
                "blocks.0.mlp_out.weight", "blocks.0.mlp_out.bias", "ln_f.weight", "ln_f.bias",
                "head.weight", "head.bias"}));
}

TEST(GptModel, ParameterShapesFollowOptions) {
  // V=64, T=16, D=32
  const auto model = build_model(gpt_spec(/*layers=*/2), at::kDouble, kCpu);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"token_embedding.weight", {64, 32}},
      {"position_embedding.weight", {16, 32}},
      {"blocks.1.ln1.weight", {32}},
      {"blocks.1.ln1.bias", {32}},
      {"blocks.1.attn_qkv.weight", {96, 32}},
      {"blocks.1.attn_qkv.bias", {96}},
      {"blocks.1.attn_out.weight", {32, 32}},
      {"blocks.1.attn_out.bias", {32}},
      {"blocks.1.ln2.weight", {32}},
      {"blocks.1.ln2.bias", {32}},
      {"blocks.1.mlp_in.weight", {128, 32}},
      {"blocks.1.mlp_in.bias", {128}},
      {"blocks.1.mlp_out.weight", {32, 128}},
      {"blocks.1.mlp_out.bias", {32}},
      {"ln_f.weight", {32}},
      {"ln_f.bias", {32}},
      {"head.weight", {64, 32}},
      {"head.bias", {64}}};
  const auto parameters = model->named_parameters();
  EXPECT_EQ(parameters.size(), 2 + 2 * 12 + 4);
  for (const auto& [name, shape] : expected) {
    ASSERT_NE(parameters.find(name), nullptr) << name;
    EXPECT_EQ(parameters[name].sizes(), shape) << name;
  }
}

// ---- initialisation ----

TEST(BuildModel, Float32InitIsFloat64InitRoundedOnce) {
  for (const ModelSpec& spec : {mlp_spec(), gpt_spec()}) {
    SCOPED_TRACE(spec.name);
    const auto wide = build_model(spec, at::kDouble, kCpu);
    const auto narrow = build_model(spec, at::kFloat, kCpu);
    const auto wide_parameters = wide->named_parameters();
    for (const auto& parameter : narrow->named_parameters()) {
      EXPECT_EQ(parameter.value().scalar_type(), at::kFloat);
      EXPECT_TRUE(parameter.value().equal(wide_parameters[parameter.key()].to(at::kFloat)))
          << parameter.key();
    }
  }
}

TEST(BuildModel, SameSeedBuildsIdenticalModelsOtherSeedDiffers) {
  for (const auto& [spec, other] : {std::pair{mlp_spec({16, 64, 4}, 7), mlp_spec({16, 64, 4}, 8)},
                                    std::pair{gpt_spec(2, 7), gpt_spec(2, 8)}}) {
    SCOPED_TRACE(spec.name);
    const auto a = build_model(spec, at::kDouble, kCpu);
    expect_same_parameters(*a, *build_model(spec, at::kDouble, kCpu));
    const auto b = build_model(other, at::kDouble, kCpu);
    for (const auto& parameter : a->named_parameters()) {
      if (parameter.key().find("ln") != std::string::npos) continue;  // constant 1 and 0
      EXPECT_FALSE(parameter.value().equal(b->named_parameters()[parameter.key()]))
          << parameter.key();
    }
  }
}

TEST(BuildModel, InitialValuesFollowTheStatedDistributions) {
  const auto model = build_model(gpt_spec(), at::kDouble, kCpu);
  for (const auto& parameter : model->named_parameters()) {
    const std::string& name = parameter.key();
    const at::Tensor& value = parameter.value();
    if (name.find("embedding") != std::string::npos) {
      EXPECT_NEAR(value.std().item<double>(), 0.02, 0.002) << name;
    } else if (name.find("ln") != std::string::npos) {
      const double expected = name.find("weight") != std::string::npos ? 1.0 : 0.0;
      EXPECT_TRUE(value.eq(expected).all().item<bool>()) << name;
    } else {
      const int64_t fan_in =
          model->named_parameters()[name.substr(0, name.rfind('.')) + ".weight"].size(1);
      EXPECT_LE(value.abs().max().item<double>(), 1.0 / std::sqrt(static_cast<double>(fan_in)))
          << name;
    }
  }
}

// parameter_names.h describes the names without building the model; it must agree with it.
TEST(ParameterNaming, AgreesWithTheBuiltModels) {
  for (const ModelSpec& spec : {mlp_spec(), mlp_spec({5, 3}), mlp_spec({4, 6, 6, 6, 2}),
                                gpt_spec(1), gpt_spec(3)}) {
    const auto model = build_model(spec, at::kDouble, kCpu);
    EXPECT_EQ(all_parameter_names(parameter_naming(spec.options)), parameter_names(*model))
        << spec.name;
  }
}

TEST(ParameterNaming, FrozenEntriesSelectWholeNamesOrModules) {
  const ParameterNaming mlp = parameter_naming(MlpOptions{{4, 6, 2}, Activation::relu});
  for (const char* entry : {"layers", "layers.0", "layers.1.bias", "layers.0.weight"}) {
    EXPECT_TRUE(selects_a_parameter(mlp, entry)) << entry;
  }
  for (const char* entry : {"", "layer", "layers.", "layers.2", "layers.01", "layers.0.w",
                            "layers.0.weight.x", "layers.-1", "layers.99999999999999999999"}) {
    EXPECT_FALSE(selects_a_parameter(mlp, entry)) << entry;
  }
  const ParameterNaming gpt = parameter_naming(GptOptions{});
  for (const char* entry : {"token_embedding", "blocks.1.ln1", "blocks.0.mlp_out.bias", "head"}) {
    EXPECT_TRUE(selects_a_parameter(gpt, entry)) << entry;
  }
  for (const char* entry : {"blocks.1.ln", "embedding", "blocks.2", "head.weight.t"}) {
    EXPECT_FALSE(selects_a_parameter(gpt, entry)) << entry;
  }
  EXPECT_TRUE(name_is_within("blocks.1.ln1.weight", "blocks.1"));
  EXPECT_FALSE(name_is_within("blocks.10.ln1.weight", "blocks.1"));
}

TEST(ParameterNaming, KnowsWhenEverythingIsFrozen) {
  const ParameterNaming mlp = parameter_naming(MlpOptions{{4, 6, 2}, Activation::relu});
  EXPECT_FALSE(leaves_a_parameter_out(mlp, {"layers"}));
  EXPECT_FALSE(leaves_a_parameter_out(mlp, {"layers.0", "layers.1"}));
  EXPECT_FALSE(leaves_a_parameter_out(mlp, {"layers.0", "layers.1.weight", "layers.1.bias"}));
  EXPECT_TRUE(leaves_a_parameter_out(mlp, {"layers.0", "layers.1.weight"}));
  const ParameterNaming gpt = parameter_naming(GptOptions{});
  EXPECT_TRUE(leaves_a_parameter_out(gpt, {"token_embedding", "blocks", "ln_f", "head"}));
  EXPECT_FALSE(leaves_a_parameter_out(
      gpt, {"token_embedding", "position_embedding", "blocks", "ln_f", "head"}));
  GptOptions deep;
  deep.layers = 1000000000;  // described, never enumerated
  EXPECT_TRUE(leaves_a_parameter_out(parameter_naming(deep), {"blocks.0", "blocks.999999999"}));
  EXPECT_EQ(describe_parameter_names(parameter_naming(MlpOptions{{4, 6, 2}, Activation::relu})),
            "layers.<0-1>.weight, layers.<0-1>.bias");
}

TEST(BuildModel, FrozenParametersDoNotRequireGrad) {
  ModelSpec spec = gpt_spec(2);
  spec.frozen = {"token_embedding", "blocks.1"};
  const auto model = build_model(spec, at::kFloat, kCpu);
  for (const auto& item : model->named_parameters()) {
    const bool frozen = item.key() == "token_embedding.weight" ||
                        item.key().rfind("blocks.1.", 0) == 0;
    EXPECT_EQ(item.value().requires_grad(), !frozen) << item.key();
  }
  EXPECT_EQ(model->frozen_parameters().size(), 13u);
  EXPECT_EQ(model->trainable_named_parameters().front().first, "position_embedding.weight");
}

TEST(BuildModel, UnknownModelIsRejected) {
  EXPECT_THROW(build_model({"cnn", MlpOptions{}, 0}, at::kDouble, kCpu), std::invalid_argument);
  EXPECT_THROW(build_model({"gpt", MlpOptions{}, 0}, at::kDouble, kCpu), std::invalid_argument);
}

// ---- losses ----

void expect_finite_loss_reaching_every_parameter(ZooModel& model, const Batch& batch) {
  const at::Tensor loss = model.loss_sum(batch);
  ASSERT_EQ(loss.dim(), 0);
  ASSERT_TRUE(std::isfinite(loss.item<double>()));
  loss.backward();
  for (const auto& parameter : model.named_parameters()) {
    const at::Tensor& grad = parameter.value().grad();
    ASSERT_TRUE(grad.defined()) << parameter.key();
    EXPECT_TRUE(grad.isfinite().all().item<bool>()) << parameter.key();
    EXPECT_GT(grad.abs().sum().item<double>(), 0.0) << parameter.key();
  }
}

TEST(MlpModel, ClassificationLossIsSummedCrossEntropy) {
  const auto model = build_model(mlp_spec({16, 64, 4}), at::kDouble, kCpu);
  const Batch batch = SampleSource(classification_data()).samples(0, 32, at::kDouble, kCpu);
  const at::Tensor expected =
      at::cross_entropy_loss(std::static_pointer_cast<MlpModel>(model)->forward(batch.inputs),
                             batch.targets, /*weight=*/{}, at::Reduction::Sum);
  EXPECT_NEAR(model->loss_sum(batch).item<double>(), expected.item<double>(), 1e-10);
  expect_finite_loss_reaching_every_parameter(*model, batch);
}

TEST(MlpModel, RegressionLossIsPerSampleMeanSquaredErrorSummed) {
  MlpOptions options;
  options.dims = {16, 32, 3};
  options.activation = Activation::tanh;
  const auto model = build_model({"mlp", options, 0}, at::kDouble, kCpu);
  DataSpec data = regression_data();
  std::get<RegressionData>(data.options).outputs = 3;
  const Batch batch = SampleSource(data).samples(0, 32, at::kDouble, kCpu);
  const at::Tensor outputs = std::static_pointer_cast<MlpModel>(model)->forward(batch.inputs);
  const double expected = at::mse_loss(outputs, batch.targets).item<double>() * 32;
  EXPECT_NEAR(model->loss_sum(batch).item<double>(), expected, 1e-10);
  expect_finite_loss_reaching_every_parameter(*model, batch);
}

TEST(MlpModel, GeluActivationTrainsToo) {
  MlpOptions options;
  options.activation = Activation::gelu;
  const auto model = build_model({"mlp", options, 0}, at::kFloat, kCpu);
  const Batch batch = SampleSource(classification_data()).samples(0, 16, at::kFloat, kCpu);
  expect_finite_loss_reaching_every_parameter(*model, batch);
}

TEST(GptModel, LossIsFiniteAndReachesEveryParameter) {
  const auto model = build_model(gpt_spec(), at::kFloat, kCpu);
  const Batch batch = SampleSource(token_data()).samples(0, 8, at::kFloat, kCpu);
  expect_finite_loss_reaching_every_parameter(*model, batch);
}

// A hand-made batch of one sequence: tokens, then padding up to `width`, the mask covering the
// first `counted` positions.
Batch one_sequence(const std::vector<int64_t>& tokens, int64_t width, int64_t counted) {
  const int64_t length = static_cast<int64_t>(tokens.size());
  Batch batch;
  batch.inputs = at::zeros({1, width}, at::kLong);
  batch.targets = at::zeros({1, width}, at::kLong);
  for (int64_t j = 0; j < length; ++j) batch.inputs[0][j] = tokens[j];
  for (int64_t j = 0; j + 1 < length; ++j) batch.targets[0][j] = tokens[j + 1];
  batch.mask = at::arange(width, at::kLong).lt(counted).unsqueeze(0);
  batch.samples = 1;
  batch.items = counted;
  return batch;
}

TEST(GptModel, EarlierPositionsIgnoreLaterTokens) {
  const auto model = build_model(gpt_spec(), at::kDouble, kCpu);
  at::NoGradGuard no_grad;
  const std::vector<int64_t> tokens = {5, 9, 13, 2, 40, 7, 33, 21};
  std::vector<int64_t> changed = tokens;
  changed[5] = 60;
  changed[7] = 1;
  // Positions 0..3 predict tokens 1..4, which the change leaves alone.
  const double before = model->loss_sum(one_sequence(tokens, 16, 4)).item<double>();
  const double after = model->loss_sum(one_sequence(changed, 16, 4)).item<double>();
  EXPECT_NEAR(before, after, 1e-12);
  // Control: a counted position that sees the change does move.
  EXPECT_GT(std::abs(model->loss_sum(one_sequence(tokens, 16, 7)).item<double>() -
                     model->loss_sum(one_sequence(changed, 16, 7)).item<double>()),
            1e-6);
}

TEST(GptModel, SequenceLossIgnoresThePaddingAndTheOtherSequences) {
  const auto model = build_model(gpt_spec(), at::kDouble, kCpu);
  at::NoGradGuard no_grad;
  const std::vector<int64_t> tokens = {5, 9, 13, 2, 40};
  const double alone = model->loss_sum(one_sequence(tokens, 5, 4)).item<double>();
  EXPECT_NEAR(model->loss_sum(one_sequence(tokens, 8, 4)).item<double>(), alone, 1e-12);
  EXPECT_NEAR(model->loss_sum(one_sequence(tokens, 16, 4)).item<double>(), alone, 1e-12);
  const Batch neighbour = one_sequence({7, 7, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}, 16, 11);
  const double neighbour_alone = model->loss_sum(neighbour).item<double>();
  EXPECT_NEAR(model->loss_sum(concat(one_sequence(tokens, 16, 4), neighbour)).item<double>(),
              alone + neighbour_alone, 1e-10);
}

TEST(GptModel, SequencesLongerThanMaxSeqLenAreRejected) {
  const auto model = build_model(gpt_spec(), at::kDouble, kCpu);
  EXPECT_THROW(model->loss_sum(one_sequence({1, 2, 3}, 17, 2)), std::invalid_argument);
}

}  // namespace
}  // namespace trainrepro
