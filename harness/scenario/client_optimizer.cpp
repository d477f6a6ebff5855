#include "harness/scenario/client_optimizer.h"

namespace trainrepro {

OptimizerConfig read_client_optimizer(ObjectReader& section) {
  OptimizerConfig optimizer;
  optimizer.type_as_written = section.required_string("type");
  const std::string& type = optimizer.type_as_written;
  if (type != "AdamW" && type != "Adam" && type != "SGD") {
    section.fail("type", "expected a torch.optim class the reference engine implements "
                         "(\"AdamW\", \"Adam\", \"SGD\", spelled as in torch.optim), found \"" +
                             type + "\"");
  }
  ObjectReader params = section.optional_object("params");
  optimizer.lr = params.optional_number("lr", 1e-3, 0.0);
  if (type == "SGD") {
    optimizer.kind = OptimizerKind::sgd;
    optimizer.weight_decay = params.optional_number("weight_decay", 0.0, 0.0);
    optimizer.momentum = params.optional_number("momentum", 0.0, 0.0);
    optimizer.dampening = params.optional_number("dampening", 0.0, 0.0);
    optimizer.nesterov = params.optional_bool("nesterov", false);
  } else {
    const bool adamw = type == "AdamW";
    optimizer.kind = adamw ? OptimizerKind::adamw : OptimizerKind::adam;
    optimizer.decoupled_weight_decay = adamw;  // torch.optim.Adam adds decay to the gradient
    optimizer.weight_decay = params.optional_number("weight_decay", adamw ? 0.01 : 0.0, 0.0);
    optimizer.eps = params.optional_number("eps", 1e-8, 0.0);
    if (params.has("betas")) {
      const nlohmann::json& value = params.required_value("betas");
      if (!value.is_array() || value.size() != 2 || !value[0].is_number() ||
          !value[1].is_number() || value[0].get<double>() < 0 || value[0].get<double>() >= 1 ||
          value[1].get<double>() < 0 || value[1].get<double>() >= 1) {
        params.fail("betas", "expected two numbers in [0, 1), found " +
                                 (value.is_array() ? value.dump() : describe_json_value(value)));
      }
      optimizer.beta1 = value[0].get<double>();
      optimizer.beta2 = value[1].get<double>();
    }
  }
  params.reject_unknown_keys();
  section.reject_unknown_keys();
  return optimizer;
}

OptimizerConfig hf_trainer_client_optimizer(double lr, double beta1, double beta2, double eps,
                                            double weight_decay) {
  OptimizerConfig optimizer;
  optimizer.kind = OptimizerKind::adamw;
  optimizer.type_as_written = "AdamW";
  optimizer.decoupled_weight_decay = true;
  optimizer.lr = lr;
  optimizer.beta1 = beta1;
  optimizer.beta2 = beta2;
  optimizer.eps = eps;
  optimizer.weight_decay = weight_decay;
  optimizer.decay_skips_bias_and_norm = true;  // two groups even at weight_decay 0
  return optimizer;
}

}  // namespace trainrepro
