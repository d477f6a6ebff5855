// "optimizer": which optimizer DeepSpeed builds from the config, and with what settings.
#include "harness/scenario/deepspeed_sections.h"

#include <algorithm>
#include <cctype>

namespace trainrepro::deepspeed_sections {
namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// torch.optim's optimizer classes (torch 2.11): DeepSpeed builds any of them by exact name.
const std::set<std::string>& torch_optimizer_names() {
  static const std::set<std::string> names = {
      "ASGD",  "Adadelta", "Adafactor", "Adagrad", "Adam",  "AdamW", "Adamax",
      "LBFGS", "NAdam",    "RAdam",     "RMSprop", "Rprop", "SGD",   "SparseAdam"};
  return names;
}

void read_adam_betas(ObjectReader& params, OptimizerConfig& optimizer) {
  if (params.has("betas")) {
    const nlohmann::json& betas = params.required_value("betas");
    if (!betas.is_array() || betas.size() != 2 || !betas[0].is_number() || !betas[1].is_number()) {
      params.fail("betas",
                  "expected two numbers [beta1, beta2], found " + describe_json_value(betas));
    }
    optimizer.beta1 = betas[0].get<double>();
    optimizer.beta2 = betas[1].get<double>();
  }
}

void read_adam_params(ObjectReader& params, OptimizerConfig& optimizer) {
  read_adam_betas(params, optimizer);
  optimizer.eps = params.optional_number("eps", optimizer.eps, 0.0);
  const bool adam_w_mode = params.optional_bool("adam_w_mode", true);
  optimizer.decoupled_weight_decay = optimizer.kind == OptimizerKind::adamw || adam_w_mode;
  // torch_adam chooses torch.optim's class, and DeepSpeed passes no weight_decay to it: then
  // torch's own default holds, 0.01 for AdamW (runtime/engine.py _configure_basic_optimizer).
  const bool torch_adam = params.optional_bool("torch_adam", false);
  const double decay_default = torch_adam && optimizer.decoupled_weight_decay ? 0.01 : 0.0;
  optimizer.weight_decay = params.optional_number("weight_decay", decay_default, 0.0);
}

bool one_bit_optimizer(const std::string& lowercase_type) {
  return lowercase_type == "onebitadam" || lowercase_type == "zerooneadam" ||
         lowercase_type == "onebitlamb";
}

// What the optimizers the engine lacks are, so the user knows whether a run without them would
// still tell the truth.
std::string why_optimizer_not_implemented(const std::string& lowercase_type) {
  if (one_bit_optimizer(lowercase_type)) {
    return ": it compresses the gradient exchange to 1 bit after a warm-up of plain Adam "
           "(freeze_step) and needs NCCL or MPI with cupy on GPUs; its updates after the "
           "warm-up are not Adam's, so no float64 golden judges them";
  }
  return "";
}

// FusedLamb(params, **the config's params): Python refuses a keyword it does not take, the class
// refuses amsgrad. The values land in `optimizer`.
std::optional<std::string> read_lamb_params(const nlohmann::json& raw_params, ObjectReader& params,
                                            OptimizerConfig& optimizer) {
  static const std::vector<std::string> keywords = {"lr",        "bias_correction", "betas",
                                                    "eps",       "eps_inside_sqrt", "weight_decay",
                                                    "max_coeff", "min_coeff",       "amsgrad"};
  for (const auto& item : raw_params.items()) {
    if (!contains(keywords, item.key())) {
      return "TypeError: FusedLamb.__init__() got an unexpected keyword argument '" + item.key() +
             "' (at " + params.file() + ":" + params.pointer_to(item.key()) + ")";
    }
  }
  if (params.optional_bool("amsgrad", false)) {
    return "RuntimeError: FusedLamb does not support the AMSGrad variant.";
  }
  read_adam_betas(params, optimizer);
  optimizer.eps = params.optional_number("eps", optimizer.eps, 0.0);
  optimizer.weight_decay = params.optional_number("weight_decay", 0.0, 0.0);
  optimizer.bias_correction = params.optional_bool("bias_correction", true);
  optimizer.eps_inside_sqrt = params.optional_bool("eps_inside_sqrt", false);
  optimizer.max_coeff = params.optional_number("max_coeff", 10.0, 0.0);
  optimizer.min_coeff = params.optional_number("min_coeff", 0.01, 0.0);
  optimizer.decoupled_weight_decay = false;  // inside the update, before the trust ratio
  return std::nullopt;
}

}  // namespace

// DeepSpeed's lookup (runtime/engine.py _configure_basic_optimizer): its own optimizer names
// case-insensitively, any other name as a torch.optim class, exactly as written; a name that is
// neither fails its assertion at deepspeed.initialize.
void read_optimizer(ObjectReader& section, const DeepSpeedRelease& release,
                    DeepSpeedConfig& result) {
  ObjectReader block = section.required_object("optimizer");
  if (!block.has("type")) {
    // DeepSpeed's get_optimizer_name reads an optimizer block without "type" as no optimizer
    // at all (its "params" are never read), so deepspeed.initialize builds none from it.
    block.note_known("params");
    result.warnings.push_back(section.file() + ":" + section.pointer_to("optimizer") +
                              ": has no \"type\": DeepSpeed builds no optimizer from it "
                              "(the training script must pass one to deepspeed.initialize)");
    return;
  }
  OptimizerConfig optimizer;
  optimizer.type_as_written = block.required_string("type");
  result.optimizer_type = optimizer.type_as_written;
  const std::string type = lowercase(optimizer.type_as_written);
  const std::string implemented = " (implemented: \"Adam\", \"AdamW\", \"Lamb\", \"SGD\")";
  if (type == "adam" || type == "adamw") {
    optimizer.kind = type == "adam" ? OptimizerKind::adam : OptimizerKind::adamw;
  } else if (type == "lamb") {
    optimizer.kind = OptimizerKind::lamb;
  } else if (contains(release.deepspeed_optimizer_names, type)) {
    result.optimizer_not_implemented = "DeepSpeed " + release.version + " optimizer \"" +
                                       optimizer.type_as_written +
                                       "\" is not implemented by the reference engine" +
                                       implemented + why_optimizer_not_implemented(type);
    return;
  } else if (optimizer.type_as_written == "SGD") {
    optimizer.kind = OptimizerKind::sgd;
  } else if (torch_optimizer_names().count(optimizer.type_as_written)) {
    result.optimizer_not_implemented = "torch.optim." + optimizer.type_as_written +
                                       " is not implemented by the reference engine" + implemented;
    return;
  } else {
    // DeepSpeed lowercases its own names only, so "sgd" is looked up in torch.optim and fails.
    const std::string shown =
        contains(release.deepspeed_optimizer_names, type) ? type : optimizer.type_as_written;
    result.optimizer_refused =
        ConfigError{ConfigErrorKind::optimizer_not_supported,
                    "AssertionError: " + shown + " is not a supported DeepSpeed Optimizer"};
    if (one_bit_optimizer(type)) {
      result.optimizer_refused->message +=
          " (1-bit Adam, 0/1 Adam and 1-bit LAMB were removed in DeepSpeed 0.19.7; set "
          "\"deepspeed_version\": \"0.16.9\" for a release that has them)";
    }
    if (lowercase(shown) == "sgd") {
      result.optimizer_refused->message +=
          " (DeepSpeed matches its own optimizer names in any case, but other names are "
          "torch.optim classes spelled exactly: write \"SGD\")";
    }
    return;
  }

  ObjectReader params = block.optional_object("params");
  // _configure_basic_optimizer refuses it for every optimizer before building one.
  if (params.has("max_grad_norm")) {
    result.optimizer_refused = ConfigError{
        ConfigErrorKind::optimizer_invalid,
        "ValueError: 'max_grad_norm' is not supported as an optimizer parameter, please switch "
        "to using the deepspeed parameter 'gradient_clipping' (at " +
            params.file() + ":" + params.pointer_to("max_grad_norm") + ")"};
    return;
  }
  optimizer.lr = params.optional_number("lr", optimizer.lr, 0.0);
  if (optimizer.kind == OptimizerKind::lamb) {
    if (auto refusal = read_lamb_params(block.required_value("params"), params, optimizer)) {
      result.optimizer_refused = ConfigError{ConfigErrorKind::optimizer_invalid, *refusal};
      return;
    }
  } else if (optimizer.kind == OptimizerKind::sgd) {
    optimizer.weight_decay = params.optional_number("weight_decay", 0.0, 0.0);
    optimizer.momentum = params.optional_number("momentum", 0.0, 0.0);
    optimizer.dampening = params.optional_number("dampening", 0.0, 0.0);
    optimizer.nesterov = params.optional_bool("nesterov", false);
  } else {
    read_adam_params(params, optimizer);
  }
  warn_about_unread_keys(params,
                         "optimizer parameter not implemented by the reference engine; "
                         "ignored",
                         result.warnings);
  warn_about_unread_keys(block, "not implemented by the reference engine; ignored",
                         result.warnings);
  result.optimizer = optimizer;
}

}  // namespace trainrepro::deepspeed_sections
