// `new --client-optimizer` and `--param-groups`: the compact spellings become the sections a
// scenario file would hold, a value that cannot is an error naming the option, and an error the
// loader finds in such a section is told in the option's terms.
#include <gtest/gtest.h>

#include <functional>

#include "harness/cli/new_optimizer_options.h"

namespace trainrepro {
namespace {

std::string error_of(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const ArgumentError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(NewOptimizerOptions, CompactClientOptimizerBecomesTheSection) {
  const OptionSection adamw =
      client_optimizer_option("AdamW lr=3e-4 weight_decay=0.1 betas=0.9,0.95");
  EXPECT_EQ(adamw.value.dump(),
            R"({"type":"AdamW","params":{"lr":0.0003,"weight_decay":0.1,"betas":[0.9,0.95]}})");
  EXPECT_EQ(client_optimizer_option("SGD lr=.5 momentum=0 nesterov=true").value.dump(),
            R"({"type":"SGD","params":{"lr":0.5,"momentum":0,"nesterov":true}})");
  EXPECT_EQ(client_optimizer_option("  Adam  ").value.dump(), R"({"type":"Adam"})");
}

TEST(NewOptimizerOptions, ClientOptimizerSpellingErrorsNameTheOption) {
  EXPECT_EQ(error_of([] { client_optimizer_option("AdamW lr=3e-4 betas=0.9"); }),
            "--client-optimizer: 'betas' expects two numbers, found '0.9' (write betas=0.9,0.999)");
  EXPECT_EQ(error_of([] { client_optimizer_option("AdamW betas=0.9,x"); }),
            "--client-optimizer: 'betas' expects two numbers, found '0.9,x' (write "
            "betas=0.9,0.999)");
  EXPECT_EQ(error_of([] { client_optimizer_option("AdamW lr=fast"); }),
            "--client-optimizer: 'lr' expects a number, found 'fast'");
  EXPECT_EQ(error_of([] { client_optimizer_option("SGD nesterov=yes"); }),
            "--client-optimizer: 'nesterov' expects true or false, found 'yes'");
  EXPECT_EQ(error_of([] { client_optimizer_option("AdamW lr=1 lr=2"); }),
            "--client-optimizer: 'lr' is given twice");
  EXPECT_EQ(error_of([] { client_optimizer_option("AdamW lr"); }),
            "--client-optimizer: expected KEY=VALUE after the class (lr=3e-4), found 'lr'");
  EXPECT_NE(error_of([] { client_optimizer_option("lr=3e-4"); })
                .find("--client-optimizer: expected the torch.optim class first"),
            std::string::npos);
  EXPECT_NE(error_of([] { client_optimizer_option(""); })
                .find("--client-optimizer: expected the torch.optim class first"),
            std::string::npos);
  EXPECT_EQ(error_of([] { client_optimizer_option("AdamW lr=1e999"); }),
            "--client-optimizer: 'lr' expects a number, found '1e999'");
  EXPECT_NE(error_of([] { client_optimizer_option("absent-file.json"); })
                .find("--client-optimizer absent-file.json: cannot open the file"),
            std::string::npos);
}

TEST(NewOptimizerOptions, NoDecayIdiomBecomesTwoGroups) {
  EXPECT_EQ(parameter_groups_option("no_decay=bias,LayerNorm.weight").value.dump(),
            R"([{},{"names_containing":["bias","LayerNorm.weight"],"weight_decay":0.0}])");
  EXPECT_NE(error_of([] { parameter_groups_option("bias,LayerNorm.weight"); })
                .find("--param-groups: expected no_decay=SUBSTRING,"),
            std::string::npos);
  EXPECT_NE(error_of([] { parameter_groups_option("no_decay=bias,,ln"); })
                .find("--param-groups: 'no_decay' expects substrings"),
            std::string::npos);
  EXPECT_NE(error_of([] { parameter_groups_option("no_decay="); })
                .find("--param-groups: 'no_decay' expects substrings"),
            std::string::npos);
  EXPECT_EQ(error_of([] { parameter_groups_option("no_decay=bias,bias"); }),
            "--param-groups: 'bias' is given twice");
}

TEST(NewOptimizerOptions, LoaderErrorsInTheirSectionsAreToldInTheOptionsTerms) {
  const std::vector<OptionSection> options = {
      client_optimizer_option("AdamW betas=0.9,1.5"),
      parameter_groups_option("no_decay=bias,LayerNorm.weight")};
  EXPECT_EQ(said_by_option(ScenarioError("out.json", "/client_optimizer/params/betas",
                                         "expected two numbers in [0, 1)"),
                           "out.json", options),
            "--client-optimizer: 'betas=0.9,1.5': expected two numbers in [0, 1)");
  EXPECT_EQ(said_by_option(ScenarioError("out.json", "/client_optimizer/type", "bad"), "out.json",
                           options),
            "--client-optimizer: 'AdamW': bad");
  EXPECT_EQ(said_by_option(ScenarioError("out.json", "/parameter_groups/1", "holds none"),
                           "out.json", options),
            "--param-groups: 'no_decay=bias,LayerNorm.weight': holds none");
  // Elsewhere in the scenario, or in another file: unchanged.
  EXPECT_EQ(said_by_option(ScenarioError("out.json", "/deepspeed/optimizer", "missing"),
                           "out.json", options),
            "out.json:/deepspeed/optimizer: missing");
  EXPECT_EQ(said_by_option(ScenarioError("model.pt", "/client_optimizer", "x"), "out.json",
                           options),
            "model.pt:/client_optimizer: x");
  EXPECT_EQ(warning_said_by_option("out.json:/parameter_groups/1/names_containing/1: "
                                   "\"LayerNorm.weight\" is in no parameter's name",
                                   "out.json", options),
            "--param-groups: 'LayerNorm.weight': \"LayerNorm.weight\" is in no parameter's name");
  // From a file: the file and the pointer inside it.
  OptionSection from_file = options[0];
  from_file.json_file = "opt.json";
  EXPECT_EQ(said_by_option(ScenarioError("out.json", "/client_optimizer/params/lrr", "unknown"),
                           "out.json", {from_file}),
            "--client-optimizer opt.json:/params/lrr: unknown");
  EXPECT_EQ(said_by_option(ScenarioError("out.json", "/client_optimizer", "expected an object"),
                           "out.json", {from_file}),
            "--client-optimizer opt.json: expected an object");
}

}  // namespace
}  // namespace trainrepro
