#include "harness/scenario/hf_trainer.h"

#include <cmath>
#include <functional>


namespace trainrepro {
namespace {

using Json = nlohmann::json;

// Python's `!=` as the Trainer compares: numbers and booleans by value (1 == 1.0 == True),
// lists element by element, anything else exactly.
bool python_equal(const Json& a, const Json& b) {
  const auto numeric = [](const Json& v) { return v.is_number() || v.is_boolean(); };
  const auto as_double = [](const Json& v) {
    return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
  };
  if (numeric(a) && numeric(b)) return as_double(a) == as_double(b);
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!python_equal(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

bool is_trainer_auto(const Json& value) { return value.is_string() && value.get<std::string>() == "auto"; }

std::string pointer_of(const std::vector<std::string>& path) {
  std::string pointer;
  for (const std::string& token : path) pointer += "/" + escape_pointer_token(token);
  return pointer;
}

// What one Trainer rule fills: the value, where it comes from, and whether a non-"auto" value
// must agree (the Trainer's fill_match) or is left alone (fill_only).
struct Rule {
  std::vector<std::string> path;
  Json value;
  std::string source;
  bool must_match;
  // Filled from the model's size or the run's length, which the error for a config without an
  // "hf_trainer" section cannot know: it names the source without a value.
  bool depends_on_run = false;
};

std::vector<Rule> trainer_rules(const HfTrainerArgs& args, int64_t world_size) {
  const int64_t n = args.max_steps;
  const double h = static_cast<double>(args.hidden_size);
  // get_warmup_steps: a count from 1 up, a fraction of the run below 1; at least 1 in 5.x.
  const int64_t warmup = std::max<int64_t>(
      1, args.warmup_steps >= 1.0
             ? static_cast<int64_t>(args.warmup_steps)
             : static_cast<int64_t>(std::ceil(static_cast<double>(n) * args.warmup_steps)));
  const std::string stage3_only =
      " (the Trainer fills it at ZeRO stage 3, accelerate at any stage)";
  return {
      {{"train_micro_batch_size_per_gpu"}, args.per_device_train_batch_size,
       "per_device_train_batch_size", true},
      {{"gradient_accumulation_steps"}, args.gradient_accumulation_steps,
       "gradient_accumulation_steps", true},
      {{"train_batch_size"},
       world_size * args.per_device_train_batch_size * args.gradient_accumulation_steps,
       "world_size × per_device_train_batch_size × gradient_accumulation_steps = " +
           std::to_string(world_size) + " × " + std::to_string(args.per_device_train_batch_size) +
           " × " + std::to_string(args.gradient_accumulation_steps),
       true},
      {{"gradient_clipping"}, args.max_grad_norm, "max_grad_norm", true},
      {{"optimizer", "params", "lr"}, args.learning_rate, "learning_rate", true},
      {{"optimizer", "params", "betas"}, Json::array({args.adam_beta1, args.adam_beta2}),
       "[adam_beta1, adam_beta2]", true},
      {{"optimizer", "params", "eps"}, args.adam_epsilon, "adam_epsilon", true},
      {{"optimizer", "params", "weight_decay"}, args.weight_decay, "weight_decay", true},
      {{"scheduler", "params", "warmup_min_lr"}, 0, "always 0", false},
      {{"scheduler", "params", "warmup_max_lr"}, args.learning_rate, "learning_rate", true},
      {{"fp16", "enabled"}, args.fp16, "fp16", true},
      {{"bf16", "enabled"}, args.bf16, "bf16", true},
      // trainer_config_finalize, at train(): the model's size and the run's length.
      {{"zero_optimization", "reduce_bucket_size"}, static_cast<int64_t>(h * h),
       "hidden_size²", false, true},
      {{"zero_optimization", "stage3_prefetch_bucket_size"}, static_cast<int64_t>(0.9 * h * h),
       "0.9 × hidden_size²" + stage3_only, false, true},
      {{"zero_optimization", "stage3_param_persistence_threshold"},
       static_cast<int64_t>(10.0 * h), "10 × hidden_size" + stage3_only, false, true},
      {{"scheduler", "params", "total_num_steps"}, n, "max_steps", true, true},
      {{"scheduler", "params", "warmup_num_steps"}, warmup,
       "warmup_steps (at least 1; below 1 a fraction of max_steps)", true, true},
      // accelerate's own table for what the Trainer leaves.
      {{"zero_optimization", "stage3_gather_16bit_weights_on_model_save"}, false,
       "accelerate: false", false},
  };
}

// The Trainer's fill_match / fill_only: nothing happens unless every parent exists; "auto" is
// replaced; any other present value is compared when the rule says it must match.
void apply_rule(const Rule& rule, HfFilledConfig& result) {
  Json* node = &result.config;
  for (size_t i = 0; i + 1 < rule.path.size(); ++i) {
    if (!node->is_object() || !node->contains(rule.path[i])) return;
    node = &(*node)[rule.path[i]];
  }
  if (!node->is_object() || !node->contains(rule.path.back())) return;
  Json& leaf = (*node)[rule.path.back()];
  const std::string pointer = pointer_of(rule.path);
  if (is_trainer_auto(leaf)) {
    leaf = rule.value;
    result.filled.push_back({pointer, rule.value, rule.source, rule.depends_on_run});
  } else if (rule.must_match && !leaf.is_null() && !python_equal(leaf, rule.value)) {
    result.mismatches.push_back(pointer + " = " + leaf.dump() + ", but " + rule.source + " = " +
                                rule.value.dump());
  }
}

void collect_autos(const Json& node, const std::string& pointer, std::vector<std::string>& out) {
  if (!node.is_object()) return;  // accelerate walks dicts only, not lists
  for (const auto& [key, value] : node.items()) {
    const std::string child = pointer + "/" + escape_pointer_token(key);
    if (is_trainer_auto(value)) {
      out.push_back(child);
    } else {
      collect_autos(value, child, out);
    }
  }
}

}  // namespace

HfTrainerArgs read_hf_trainer(ObjectReader& section, int64_t default_max_steps,
                              int64_t default_hidden_size) {
  HfTrainerArgs args;
  const std::string accelerate =
      section.optional_string("accelerate_version", newest_accelerate_release().version);
  const AccelerateRelease* release = find_accelerate_release(accelerate);
  if (release == nullptr) {
    section.fail("accelerate_version",
                 "expected an accelerate release this harness knows (" +
                     describe_known_accelerate_releases() + "), found \"" + accelerate + "\"");
  }
  args.accelerate = *release;
  const std::string version = section.optional_string("transformers_version", kTransformersRelease);
  if (version != kTransformersRelease) {
    section.fail("transformers_version", std::string("expected \"") + kTransformersRelease +
                                             "\", the release whose Trainer this follows; found \"" +
                                             version + "\"");
  }
  args.per_device_train_batch_size =
      section.optional_int("per_device_train_batch_size", args.per_device_train_batch_size, 1);
  args.gradient_accumulation_steps =
      section.optional_int("gradient_accumulation_steps", args.gradient_accumulation_steps, 1);
  args.learning_rate = section.optional_number("learning_rate", args.learning_rate, 0.0);
  args.adam_beta1 = section.optional_number("adam_beta1", args.adam_beta1, 0.0);
  args.adam_beta2 = section.optional_number("adam_beta2", args.adam_beta2, 0.0);
  args.adam_epsilon = section.optional_number("adam_epsilon", args.adam_epsilon, 0.0);
  args.weight_decay = section.optional_number("weight_decay", args.weight_decay, 0.0);
  args.max_grad_norm = section.optional_number("max_grad_norm", args.max_grad_norm, 0.0);
  args.fp16 = section.optional_bool("fp16", args.fp16);
  args.bf16 = section.optional_bool("bf16", args.bf16);
  args.warmup_steps = section.optional_number("warmup_steps", args.warmup_steps, 0.0);
  args.max_steps = section.optional_int("max_steps", default_max_steps, 1);
  // A model without a config the Trainer could read it from (your own TorchScript module): say it.
  args.hidden_size = default_hidden_size > 0
                         ? section.optional_int("hidden_size", default_hidden_size, 1)
                         : section.required_int("hidden_size", 1);
  // Batch products must stay far from overflow (the batch keys' own bound is 2^40).
  constexpr int64_t kLargest = int64_t{1} << 30;
  const auto at_most = [&section](const char* key, int64_t value) {
    if (value > kLargest) {
      section.fail(key, "expected at most " + std::to_string(kLargest) + ", found " +
                            std::to_string(value));
    }
  };
  at_most("per_device_train_batch_size", args.per_device_train_batch_size);
  at_most("gradient_accumulation_steps", args.gradient_accumulation_steps);
  at_most("hidden_size", args.hidden_size);
  if (args.fp16 && args.bf16) {
    section.fail("bf16", "expected at most one of fp16 and bf16 (TrainingArguments refuses both)");
  }
  section.reject_unknown_keys();
  return args;
}

HfFilledConfig fill_as_hf_trainer(const nlohmann::json& config, const HfTrainerArgs& args,
                                  int64_t world_size) {
  HfFilledConfig result;
  result.config = config;
  if (!result.config.is_object()) return result;
  for (const Rule& rule : trainer_rules(args, world_size)) apply_rule(rule, result);
  // accelerate's DeepSpeedPlugin.__post_init__ (utils/dataclasses.py), after the Trainer's first
  // pass: a config without gradient_accumulation_steps gets 1. What that 1 decides depends on
  // who holds the boundary (hf_trainer_release.h).
  const std::string window = std::to_string(args.gradient_accumulation_steps);
  const std::string accelerate = "accelerate " + args.accelerate.version;
  if (!result.config.contains("gradient_accumulation_steps")) {
    result.config["gradient_accumulation_steps"] = 1;
    result.inserted.push_back(
        "/gradient_accumulation_steps = 1 (the config has none: DeepSpeedPlugin inserts it). " +
        (args.accelerate.passes_explicit_boundary
             ? "It decides nothing here: the Trainer counts its own window of " + window +
                   " micro-batches and " + accelerate + " passes that boundary to DeepSpeed"
             : accelerate + " calls engine.step() after every backward, so DeepSpeed's 1 "
                            "makes every micro-batch a boundary and the Trainer's "
                            "gradient_accumulation_steps = " + window +
                   " only divides the loss (accelerate " + kAccelerateExplicitBoundarySince +
                   " passes the Trainer's boundary instead)"));
  }
  const Json& deepspeed_gas = result.config["gradient_accumulation_steps"];
  const std::string deepspeed_window =
      deepspeed_gas.is_number_integer() ? std::to_string(deepspeed_gas.get<int64_t>()) : "its";
  result.boundary =
      args.accelerate.passes_explicit_boundary
          ? "the Trainer (transformers " + std::string(kTransformersRelease) +
                ") counts windows of " + window + " micro-batches, divides the loss by " +
                window + " and calls backward with scale_wrt_gas=False; " + accelerate +
                " passes its boundary to DeepSpeed (set_gradient_accumulation_boundary before "
                "every backward, engine.step() at the window's end): an optimizer step every " +
                window + " micro-batches, whatever gradient_accumulation_steps DeepSpeed "
                "resolves"
          : accelerate + " calls engine.step() after every backward: DeepSpeed's "
                         "gradient_accumulation_steps (" + deepspeed_window +
                ") decides the boundary, while the Trainer divides the loss by its own " +
                window + " and calls backward with scale_wrt_gas=False";
  // accelerate's set_mixed_precision: a precision flag without its block in the config gets one.
  if (args.fp16 && !result.config.contains("fp16")) {
    result.config["fp16"] = {{"enabled", true}, {"auto_cast", true}};
    result.inserted.push_back("/fp16 = {\"enabled\": true, \"auto_cast\": true} (fp16)");
  }
  if (args.bf16 && !result.config.contains("bf16")) {
    result.config["bf16"] = {{"enabled", true}};
    result.inserted.push_back("/bf16 = {\"enabled\": true} (bf16)");
  }
  result.unknown_autos = find_auto_values(result.config);
  return result;
}

TrainerLoopSpec trainer_loop_of(const HfTrainerArgs& args) {
  TrainerLoopSpec loop;
  loop.gradient_accumulation_steps = args.gradient_accumulation_steps;
  loop.transformers_version = kTransformersRelease;
  loop.accelerate_version = args.accelerate.version;
  loop.explicit_boundary = args.accelerate.passes_explicit_boundary;
  return loop;
}

std::vector<std::string> find_auto_values(const nlohmann::json& config) {
  std::vector<std::string> pointers;
  collect_autos(config, "", pointers);
  return pointers;
}

std::string describe_auto_values(const nlohmann::json& config, int64_t world_size) {
  HfTrainerArgs defaults;
  defaults.max_steps = 1;  // unknown here; named as max_steps below
  defaults.hidden_size = 1;
  const HfFilledConfig filled = fill_as_hf_trainer(config, defaults, world_size);
  const size_t count = filled.filled.size() + filled.unknown_autos.size();
  std::string message = std::to_string(count) + (count == 1 ? " value is" : " values are") +
                        " \"auto\", which the Hugging Face Trainer fills in before DeepSpeed "
                        "sees the config (DeepSpeed cannot read it). Describe the run's "
                        "TrainingArguments in an \"hf_trainer\" section, or write the values. "
                        "Under TrainingArguments' defaults (transformers " +
                        kTransformersRelease + ", " + std::to_string(world_size) +
                        (world_size == 1 ? " rank" : " ranks") + ") the Trainer would write: ";
  std::vector<std::string> items;
  for (const HfFilledValue& value : filled.filled) {
    items.push_back(value.pointer + (value.depends_on_run ? "" : " = " + value.value.dump()) +
                    " from " + value.source);
  }
  for (const std::string& pointer : filled.unknown_autos) {
    items.push_back(pointer +
                    ": no Trainer value; accelerate refuses it (\"not found in kwargs\"): write "
                    "a value");
  }
  for (size_t i = 0; i < items.size(); ++i) message += (i == 0 ? "" : "; ") + items[i];
  return message;
}

}  // namespace trainrepro
