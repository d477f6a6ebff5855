#include "harness/scenario/load_scenario.h"

#include <algorithm>
#include <optional>
#include <regex>

#include "harness/scenario/client_optimizer.h"
#include "harness/scenario/hf_trainer.h"
#include "harness/scenario/memory_judging_steps.h"
#include "harness/scenario/parameter_groups.h"
#include "harness/scenario/performance_section.h"
#include "harness/scenario/json_document.h"
#include "harness/json/printable.h"
#include "harness/json/scenario_error.h"
#include "models/model_data_fit.h"
#include "models/parameter_names.h"

namespace trainrepro {
namespace {

// Names become result file names (results/<name>.json) and CTest names, so they are
// restricted to characters that are safe in both.
const std::regex& name_pattern() {
  static const std::regex pattern("[a-z0-9][a-z0-9._-]{0,99}");
  return pattern;
}

// Reads {"name", "options", "seed"} against a zoo; `what` is "model" or "data generator".
template <typename Options>
ZooChoice<Options> read_zoo_choice(ObjectReader& section, const std::vector<ZooEntry<Options>>& zoo,
                                   const std::string& what) {
  ZooChoice<Options> choice;
  choice.name = section.required_string("name");
  const ZooEntry<Options>* entry = find_in_zoo(zoo, choice.name);
  if (entry == nullptr) {
    section.fail("name",
                 "unknown " + what + " \"" + choice.name + "\"; available: " + names_in_zoo(zoo));
  }
  ObjectReader options = section.optional_object("options");
  choice.options = entry->read_options(options);
  options.reject_unknown_keys();
  if (!entry->seeded && section.has("seed")) {
    section.fail("seed", "\"" + choice.name + "\" reads its values from your file: a seed would "
                         "change nothing; remove it");
  }
  choice.seed = section.optional_int("seed", 0, 0);
  section.reject_unknown_keys();
  return choice;
}

// "reference": where the bug this scenario reproduces was reported. Every field is required:
// a catalogue entry without its source or releases cannot be checked by its reader.
BugReference read_reference(ObjectReader& section) {
  BugReference reference;
  reference.url = section.required_string("url");
  if (reference.url.rfind("https://", 0) != 0 || reference.url.size() <= 8) {
    section.fail("url", "expected the https:// address of the public issue or pull request, "
                        "found \"" + printable(reference.url) + "\"");
  }
  reference.project = section.required_string("project");
  const std::vector<std::string> projects = {"deepspeed", "transformers", "accelerate", "pytorch"};
  if (std::find(projects.begin(), projects.end(), reference.project) == projects.end()) {
    section.fail("project", "expected one of \"deepspeed\", \"transformers\", \"accelerate\", "
                            "\"pytorch\", found \"" + printable(reference.project) + "\"");
  }
  reference.affected = section.required_string("affected");
  if (reference.affected.empty()) {
    section.fail("affected", "expected the release(s) with the bug, found \"\"");
  }
  reference.fixed = section.required_string("fixed");
  if (reference.fixed.empty()) {
    section.fail("fixed", "expected the release or pull request that fixed it, or \"user "
                          "code\", found \"\"");
  }
  section.reject_unknown_keys();
  return reference;
}

// "frozen": names or module paths of parameters the user sets requires_grad=False on. Each must
// select a parameter (a typo would silently train everything), and one must stay trainable
// (torch.optim refuses an empty parameter list).
std::vector<std::string> read_frozen(ObjectReader& model, const ModelOptions& options) {
  const std::vector<std::string> frozen = model.optional_string_list("frozen");
  const ParameterNaming naming = parameter_naming(options);
  for (size_t i = 0; i < frozen.size(); ++i) {
    if (!selects_a_parameter(naming, frozen[i])) {
      model.fail_at("/frozen/" + std::to_string(i),
                    "expected the name of a parameter or of a module holding some (as "
                    "named_parameters() writes them), found \"" + printable(frozen[i]) +
                        "\"; this model's parameters: " + describe_parameter_names(naming));
    }
  }
  if (!frozen.empty() && !leaves_a_parameter_out(naming, frozen)) {
    model.fail("frozen", "every parameter is frozen: nothing would train (torch.optim raises "
                         "\"optimizer got an empty parameter list\"); leave at least one out");
  }
  return frozen;
}

LoopSpec read_loop(ObjectReader& loop, const GoldenSpec& golden, const MemorySpec& memory) {
  LoopSpec spec;
  spec.zero_grad = loop.optional_enum("zero_grad", spec.zero_grad, zero_grad_spellings());
  spec.loss_scaling =
      loop.optional_enum("loss_scaling", spec.loss_scaling, loss_scaling_spellings());
  spec.forward = loop.optional_enum("forward", spec.forward, forward_spellings());
  spec.stepping = loop.optional_enum("stepping", spec.stepping, stepping_spellings());
  spec.token_normalisation = loop.optional_enum("token_normalisation", spec.token_normalisation,
                                                token_normalisation_spellings());
  spec.gradient_sync =
      loop.optional_enum("gradient_sync", spec.gradient_sync, gradient_sync_spellings());
  spec.keep = loop.optional_enum("keep", spec.keep, keep_spellings());
  spec.clip_grad_norm = loop.optional_number("clip_grad_norm", 0.0, 0.0);
  spec.lr_scheduler_step = loop.optional_enum("lr_scheduler_step", spec.lr_scheduler_step,
                                              lr_scheduler_stepping_spellings());
  spec.activation_checkpointing =
      loop.optional_enum("activation_checkpointing", spec.activation_checkpointing,
                         activation_checkpointing_spellings());
  loop.note_known("evaluation");
  if (loop.has("evaluation")) {
    ObjectReader evaluation = loop.required_object("evaluation");
    EvaluationSpec eval;
    eval.every = evaluation.optional_int("every", eval.every, 1);
    eval.batches = evaluation.optional_int("batches", eval.batches, 1);
    eval.no_grad = evaluation.optional_bool("no_grad", eval.no_grad);
    eval.sum_as_tensor = evaluation.optional_bool("sum_as_tensor", eval.sum_as_tensor);
    eval.backward = evaluation.optional_bool("backward", eval.backward);
    if (eval.backward && eval.no_grad) {
      evaluation.fail("backward",
                      "backward needs a graph: set \"no_grad\": false with "
                      "\"backward\": true (under no_grad there is nothing to "
                      "differentiate)");
    }
    evaluation.reject_unknown_keys();
    spec.evaluation = eval;
  }
  if (turns_sync_off(spec.gradient_sync) && spec.stepping != SteppingHabit::every_micro_step) {
    loop.fail("gradient_sync",
              "expected \"engine\" or \"every_micro_step\" with \"stepping\": \"" +
                  std::string(spelling_of(spec.stepping, stepping_spellings())) +
                  "\", found \"" +
                  spelling_of(spec.gradient_sync, gradient_sync_spellings()) +
                  "\": a loop that both steps around the engine and turns the sync off is not "
                  "modelled (which backward is the boundary's depends on both); describe one "
                  "habit at a time");
  }
  // Every scenario that trains gets a memory verdict: unless it opts out, the loop runs the
  // steps a verdict needs; only the first golden.steps are compared with the golden.
  const int64_t default_steps =
      memory.judge ? std::max(golden.steps, steps_to_judge_memory(memory, spec.evaluation))
                   : golden.steps;
  spec.steps = loop.optional_int("steps", default_steps, 1);
  if (spec.steps < golden.steps) {
    loop.fail("steps", "expected at least golden.steps (" + std::to_string(golden.steps) +
                           ") optimizer steps so every golden step can be compared, found " +
                           std::to_string(spec.steps));
  }
  loop.reject_unknown_keys();
  return spec;
}

// "deepspeed_version": the release whose semantics decide defaults and refusals.
// `note` says when a release is read as another of its line.
const DeepSpeedRelease& read_deepspeed_release(ObjectReader& root, std::string& note) {
  const DeepSpeedRelease& newest = newest_deepspeed_release();
  const std::string version = root.optional_string("deepspeed_version", newest.version);
  const DeepSpeedRelease* release = find_deepspeed_release(version, note);
  if (!release) {
    root.fail("deepspeed_version", "expected a DeepSpeed release this harness knows (" +
                                       describe_known_releases() + "), found \"" + version + "\"");
  }
  if (!note.empty()) note = root.file() + ":" + root.pointer_to("deepspeed_version") + ": " + note;
  return *release;
}

MemorySpec read_memory(ObjectReader& memory) {
  MemorySpec spec;
  spec.warmup_steps = memory.optional_int("warmup_steps", spec.warmup_steps, 0);
  spec.window = memory.optional_int("window", spec.window, 2);
  // Leaks are judged by what each step leaves alive, whatever its size; a byte threshold
  // would hide small leaks, so the old keys are refused rather than silently ignored.
  for (const char* removed : {"tensor_threshold_bytes_per_step", "host_threshold_bytes_per_step"}) {
    if (memory.has(removed)) {
      memory.fail(removed,
                  "removed: a leak is a step that leaves allocations alive, step after step, "
                  "whatever their size; bytes per step are reported, never thresholded. Delete "
                  "this key");
    }
  }
  spec.judge = memory.optional_bool("judge", true);
  memory.note_known("reason");
  if (!spec.judge) {
    spec.reason = memory.required_string("reason");
    if (spec.reason.empty()) {
      memory.fail("reason",
                  "expected a sentence saying why this scenario's memory is not judged (it is "
                  "printed on its outcome line), found \"\"");
    }
  } else if (memory.has("reason")) {
    memory.fail("reason",
                "expected only with \"judge\": false (the reason memory is not judged), found "
                "it while memory is judged");
  }
  memory.note_known("budget_peak_bytes");
  if (memory.has("budget_peak_bytes")) {
    spec.budget_peak_bytes = memory.required_int("budget_peak_bytes", 1);
  }
  memory.reject_unknown_keys();
  return spec;
}

ToleranceOverride read_tolerance(ObjectReader& tolerance) {
  ToleranceOverride spec;
  spec.rtol = tolerance.optional_number("rtol", 0.0, 0.0);
  spec.atol = tolerance.optional_number("atol", 0.0, 0.0);
  spec.reason = tolerance.required_string("reason");
  if (spec.reason.empty()) {
    tolerance.fail("reason",
                   "expected a sentence saying why the default tolerance is wrong "
                   "here, found \"\"");
  }
  tolerance.reject_unknown_keys();
  return spec;
}

GoldenSpec read_golden(ObjectReader& golden) {
  GoldenSpec spec;
  spec.train_batch_size = golden.required_int("train_batch_size", 1);
  spec.steps = golden.optional_int("steps", spec.steps, 1);
  golden.reject_unknown_keys();
  return spec;
}

std::vector<Requirement> read_requirements(ObjectReader& root) {
  std::vector<Requirement> requirements;
  const std::vector<std::string> spellings = root.optional_string_list("requires");
  for (size_t i = 0; i < spellings.size(); ++i) {
    bool found = false;
    for (const auto& [requirement, name] : requirement_spellings()) {
      if (spellings[i] == name) {
        requirements.push_back(requirement);
        found = true;
      }
    }
    if (!found) {
      root.fail_at("/requires/" + std::to_string(i),
                   "expected one of \"cuda\", \"mpi\", found \"" + spellings[i] + "\"");
    }
  }
  return requirements;
}

// The model config's hidden_size as the Trainer would find it: the GPT's width; for the MLP,
// its widest layer (an MLP has no config; a user's own model gives hidden_size in hf_trainer).
int64_t model_hidden_size(const ModelOptions& options) {
  if (const auto* gpt = std::get_if<GptOptions>(&options)) return gpt->d_model;
  if (std::holds_alternative<TorchScriptOptions>(options)) return 0;  // hf_trainer must say
  const auto& dims = std::get<MlpOptions>(options).dims;
  return *std::max_element(dims.begin(), dims.end());
}

// The Trainer runs its own loop (transformers 5.24.0 _inner_training_loop): it zeroes
// (model.zero_grad()), clips (DeepSpeed's gradient_clipping) and steps (engine.step() through
// accelerate) itself, and never steps DeepSpeed's scheduler from outside. A loop habit that
// describes a loop of the user's own cannot happen there. What stays: the loss the model
// returns (token_normalisation, loss_scaling: how a Trainer release scales it), what is kept,
// evaluation without backward, checkpointing inside the model.
void refuse_habits_the_trainer_has_not(ObjectReader& root, const LoopSpec& loop) {
  const auto refuse = [&root](const char* key) {
    root.fail_at(std::string("/loop/") + key,
                 std::string("the Hugging Face Trainer runs the training loop (\"hf_trainer\"): "
                             "it zeroes, clips, steps and syncs gradients itself; \"") +
                     key + "\" describes a loop of your own. Remove it, or the hf_trainer "
                           "section if your script drives DeepSpeed itself");
  };
  if (loop.zero_grad != ZeroGradHabit::at_boundary) refuse("zero_grad");
  if (loop.stepping != SteppingHabit::every_micro_step) refuse("stepping");
  if (loop.gradient_sync != GradientSync::engine) refuse("gradient_sync");
  if (loop.clip_grad_norm > 0.0) refuse("clip_grad_norm");
  if (loop.lr_scheduler_step != LrSchedulerStepping::engine) refuse("lr_scheduler_step");
  if (loop.evaluation && loop.evaluation->backward) refuse("evaluation");
}

// The config DeepSpeed receives: with an "hf_trainer" section, as the transformers Trainer and
// accelerate fill and check it; without one, the pasted config, which must hold no "auto".
nlohmann::json apply_hf_trainer(ObjectReader& root, Scenario& scenario,
                                const nlohmann::json& pasted, std::vector<std::string>& notes,
                                std::optional<OptimizerConfig>& trainer_optimizer) {
  const std::string at_deepspeed = root.file() + ":" + root.pointer_to("deepspeed");
  root.note_known("hf_trainer");
  if (!root.has("hf_trainer")) {
    const std::vector<std::string> autos = find_auto_values(pasted);
    if (!autos.empty()) {
      root.fail_at("/deepspeed" + autos.front(), describe_auto_values(pasted, scenario.world_size));
    }
    return pasted;
  }
  ObjectReader section = root.required_object("hf_trainer");
  const HfTrainerArgs args =
      read_hf_trainer(section, scenario.loop.steps, model_hidden_size(scenario.model.options));
  // accelerate's DeepSpeedPlugin refuses a config file without a ZeRO section (1.7.0 and 1.15.0).
  if (pasted.is_object() && !pasted.contains("zero_optimization")) {
    root.fail_at("/deepspeed", "accelerate (" + args.accelerate.version +
                                   ", under the Hugging Face Trainer) refuses a DeepSpeed config "
                                   "without \"zero_optimization\": \"Please specify the ZeRO "
                                   "optimization config in the DeepSpeed config.\"");
  }
  refuse_habits_the_trainer_has_not(root, scenario.loop);
  scenario.trainer = trainer_loop_of(args);
  const HfFilledConfig filled = fill_as_hf_trainer(pasted, args, scenario.world_size);
  const auto join = [](const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) text += (text.empty() ? " " : "; ") + line;
    return text;
  };
  if (!filled.mismatches.empty()) {
    std::vector<std::string> located;
    for (const std::string& mismatch : filled.mismatches) located.push_back("/deepspeed" + mismatch);
    root.fail_at(located.front().substr(0, located.front().find(' ')),
                 std::string("the Hugging Face Trainer (transformers ") + kTransformersRelease +
                     ") refuses this config at train(): " + std::to_string(located.size()) +
                     (located.size() == 1 ? " value disagrees" : " values disagree") +
                     " with \"hf_trainer\" (TrainingArguments); set them to \"auto\" or "
                     "change hf_trainer:" +
                     join(located));
  }
  if (!filled.unknown_autos.empty()) {
    root.fail_at("/deepspeed" + filled.unknown_autos.front(),
                 "\"auto\" that the Trainer does not fill: accelerate refuses it at prepare() "
                 "(\"not found in kwargs\"); write a value. All such keys:" +
                     join(filled.unknown_autos));
  }
  for (const HfFilledValue& value : filled.filled) {
    notes.push_back(at_deepspeed + value.pointer + ": \"auto\" filled by the Hugging Face "
                    "Trainer with " + value.value.dump() + " (" + value.source + ")");
  }
  for (const std::string& inserted : filled.inserted) {
    notes.push_back(at_deepspeed + ": accelerate inserts " + inserted);
  }
  notes.push_back(root.file() + ":" + root.pointer_to("hf_trainer") + ": " + filled.boundary);
  // No optimizer in the config: the Trainer builds torch AdamW itself, passes it to
  // deepspeed.initialize, and allows it under ZeRO (zero_allow_untested_optimizer). Its
  // weight decay skips biases and LayerNorm parameters: two parameter groups.
  nlohmann::json config = filled.config;
  if (config.is_object() && !config.contains("optimizer")) {
    config["zero_allow_untested_optimizer"] = true;
    trainer_optimizer = hf_trainer_client_optimizer(args.learning_rate, args.adam_beta1,
                                                    args.adam_beta2, args.adam_epsilon,
                                                    args.weight_decay);
    notes.push_back(at_deepspeed + ": no optimizer: the Trainer passes its own torch AdamW "
                    "(learning_rate, adam_beta1/2, adam_epsilon, weight_decay of hf_trainer; "
                    "biases and LayerNorm parameters in a group without decay) and sets "
                    "zero_allow_untested_optimizer");
  }
  return config;
}

// "client_optimizer" (or the Trainer's own): DeepSpeed uses the client's and ignores the
// config's "optimizer" block without a word; we say so.
void read_client_optimizer_section(ObjectReader& root, DeepSpeedConfig& config,
                                   const std::optional<OptimizerConfig>& trainer_optimizer) {
  root.note_known("client_optimizer");
  std::optional<OptimizerConfig> client = trainer_optimizer;
  if (root.has("client_optimizer")) {
    if (trainer_optimizer) {
      root.fail("client_optimizer",
                "the Hugging Face Trainer builds the client optimizer itself when the config "
                "has none (hf_trainer is given): remove client_optimizer, or put the optimizer "
                "in the config");
    }
    ObjectReader section = root.required_object("client_optimizer");
    client = read_client_optimizer(section);
  }
  if (!client) return;
  if (!config.optimizer_type.empty() && !trainer_optimizer) {
    config.warnings.push_back(root.file() + ":" + root.pointer_to("deepspeed") +
                              "/optimizer: ignored: DeepSpeed uses the client optimizer passed "
                              "to deepspeed.initialize (client_optimizer) and never reads this "
                              "block");
  }
  config.optimizer_type = "client torch.optim." + client->type_as_written;
  config.client_optimizer = true;
  config.optimizer = client;
  config.optimizer_not_implemented.clear();
  config.optimizer_refused.reset();
}

// "parameter_groups": the groups the script passes to deepspeed.initialize, which the optimizer
// that wins (the config's or the client's) is built over.
void read_parameter_groups_section(ObjectReader& root, Scenario& scenario, bool trainer_builds) {
  root.note_known("parameter_groups");
  if (!root.has("parameter_groups")) return;
  if (root.has("hf_trainer")) {
    root.fail("parameter_groups",
              trainer_builds
                  ? "the Hugging Face Trainer builds its own two groups (no decay for biases "
                    "and LayerNorm) when the config has no optimizer: remove parameter_groups"
                  : "the Hugging Face Trainer hands deepspeed.initialize the model's parameters "
                    "itself, without groups: remove parameter_groups");
  }
  std::optional<OptimizerConfig>& optimizer = scenario.deepspeed.optimizer;
  if (!optimizer) return;  // refused or missing: reported on its own
  optimizer->parameter_groups =
      read_parameter_groups(root, scenario.model.options, scenario.model.frozen, *optimizer,
                            scenario.deepspeed.warnings);
  if (scenario.deepspeed.scheduler) {
    if (auto warning = overwritten_group_lrs(root.file() + ":" + root.pointer_to("parameter_groups"),
                                             optimizer->parameter_groups, optimizer->lr,
                                             *scenario.deepspeed.scheduler)) {
      scenario.deepspeed.warnings.push_back(*warning);
    }
  }
}

// OneCycle cycles the optimizer's "betas"; torch.optim.SGD has none, so DeepSpeed warns and
// leaves the momentum alone (lr_schedules.py _initialize_momentum). Known only once the
// optimizer, the config's or the client's, is.
void stop_cycling_momentum_without_betas(const ObjectReader& root, DeepSpeedConfig& config) {
  if (!config.scheduler || config.scheduler->kind != LrScheduleKind::one_cycle ||
      !config.scheduler->one_cycle.cycle_momentum || !config.optimizer ||
      config.optimizer->kind != OptimizerKind::sgd) {
    return;
  }
  config.scheduler->one_cycle.cycle_momentum = false;
  config.warnings.push_back(root.file() + ":" + root.pointer_to("deepspeed") +
                            "/scheduler/params: DeepSpeed warns \"cycle_momentum is disabled "
                            "because optimizer SGD does not support momentum, no betas attribute "
                            "in defaults\": OneCycle moves the learning rate only");
}

}  // namespace

Scenario load_scenario(const std::string& file) {
  KeyOrder key_order;
  const nlohmann::json document = read_json_file(file, JsonDialect::strict, &key_order);
  return load_scenario_document(document, file, &key_order);
}

Scenario load_scenario_document(const nlohmann::json& document, const std::string& file,
                                const KeyOrder* key_order) {
  ObjectReader root(document, file, "", key_order);
  Scenario scenario;
  scenario.file = file;

  scenario.name = root.required_string("name");
  if (!std::regex_match(scenario.name, name_pattern())) {
    root.fail("name",
              "expected lowercase letters, digits, '.', '_' or '-' (it names the results "
              "file), starting with a letter or digit, at most 100 characters; found \"" +
                  scenario.name + "\"");
  }
  scenario.description = root.required_string("description");
  if (scenario.description.empty()) {
    root.fail("description", "expected a sentence saying what this scenario shows, found \"\"");
  }
  scenario.tags = root.optional_string_list("tags");
  root.note_known("reference");
  if (root.has("reference")) {
    ObjectReader reference = root.required_object("reference");
    scenario.reference = read_reference(reference);
  }
  scenario.requires_ = read_requirements(root);

  ObjectReader model = root.required_object("model");
  model.note_known("frozen");
  static_cast<ZooChoice<ModelOptions>&>(scenario.model) =
      read_zoo_choice(model, model_zoo(), "model");
  scenario.model.frozen = read_frozen(model, scenario.model.options);
  ObjectReader data = root.required_object("data");
  scenario.data = read_zoo_choice(data, data_zoo(), "data generator");
  if (auto problem = check_model_fits_data(scenario.model.options, scenario.data.options)) {
    const std::string pointer = problem->model_key.empty()
                                    ? "/model/name"
                                    : "/model/options/" + escape_pointer_token(problem->model_key);
    root.fail_at(pointer, problem->message);
  }

  // The run's size and length first: the Hugging Face Trainer fills "auto" from them.
  scenario.world_size = root.optional_int("world_size", 1, 1);
  // More ranks than any cluster has; beyond this the batch products could overflow.
  if (scenario.world_size > kLargestWorldSize) {
    root.fail("world_size", "expected at most " + std::to_string(kLargestWorldSize) +
                                " ranks, found " + std::to_string(scenario.world_size));
  }
  // A performance workload too large for a golden is measured only: it has neither a golden
  // nor an expectation. Leaving out one of the two is a mistake, not a request.
  const bool has_golden = root.has("golden");
  const bool has_expect = root.has("expect");
  scenario.measure_only = root.has("performance") && !has_golden && !has_expect;
  if (root.has("performance") && has_golden != has_expect) {
    root.fail(has_golden ? "expect" : "golden",
              "required key is missing: a scenario that trains has both \"golden\" and "
              "\"expect\"; a performance scenario that is only measured (`perf run`, never "
              "`run`) has neither");
  }
  if (scenario.measure_only) {
    scenario.golden.steps = 1;
  } else {
    ObjectReader golden = root.required_object("golden");
    scenario.golden = read_golden(golden);
  }
  // Memory first: how many steps the loop runs by default depends on it.
  ObjectReader memory = root.optional_object("memory");
  scenario.memory = read_memory(memory);
  ObjectReader loop = root.optional_object("loop");
  scenario.loop = read_loop(loop, scenario.golden, scenario.memory);

  std::string release_note;
  const DeepSpeedRelease& release = read_deepspeed_release(root, release_note);
  const nlohmann::json& pasted = root.required_value("deepspeed");
  std::vector<std::string> trainer_notes;
  std::optional<OptimizerConfig> trainer_optimizer;
  const nlohmann::json config =
      apply_hf_trainer(root, scenario, pasted, trainer_notes, trainer_optimizer);
  scenario.deepspeed =
      read_deepspeed_config(config, file, root.pointer_to("deepspeed"), release, key_order);
  scenario.deepspeed.verbatim = pasted;  // as the user wrote it; the notes say what was filled
  for (std::string& note : trainer_notes) scenario.deepspeed.warnings.push_back(std::move(note));
  if (!release_note.empty()) scenario.deepspeed.warnings.push_back(release_note);
  read_client_optimizer_section(root, scenario.deepspeed, trainer_optimizer);
  // A config DeepSpeed refuses while reading it (a removed key, a key pydantic forbids) never
  // reaches the optimizer: the refusal is the scenario's outcome, whatever else is missing.
  const bool refused = scenario.deepspeed.refused_while_reading.has_value();
  if (!refused && scenario.deepspeed.optimizer_type.empty()) {
    root.fail_at("/deepspeed/optimizer",
                 "required key is missing: DeepSpeed builds no optimizer without one (if your "
                 "script passes its own optimizer to deepspeed.initialize, describe it: "
                 "`trainrepro new --client-optimizer 'AdamW lr=0.001'`, or a "
                 "\"client_optimizer\" section: {\"type\": \"AdamW\", \"params\": {\"lr\": "
                 "0.001}}; a Hugging Face Trainer run describes its TrainingArguments in "
                 "\"hf_trainer\", `new --hf-trainer`)");
  }
  if (!refused && !scenario.deepspeed.optimizer_not_implemented.empty()) {
    root.fail_at("/deepspeed/optimizer/type", scenario.deepspeed.optimizer_not_implemented);
  }
  if (!refused && !scenario.deepspeed.scheduler_not_implemented.empty()) {
    root.fail_at("/deepspeed/scheduler/type", scenario.deepspeed.scheduler_not_implemented);
  }
  stop_cycling_momentum_without_betas(root, scenario.deepspeed);
  // fp16's dynamic loss scale skips its first windows while it comes down to a scale that does
  // not overflow (calibration), and the memory warm-up counts from the first applied update. A
  // scenario compares at least one applied update, so fewer than golden.steps windows are
  // skipped: a defaulted run adds golden.steps to the steps a memory verdict needs; not under
  // the Trainer: its max_steps (the scheduler's length) was read as loop.steps already.
  if (!loop.has("steps") && !scenario.trainer && scenario.memory.judge &&
      scenario.deepspeed.fp16_enabled &&
      scenario.deepspeed.fp16.loss_scale == 0.0) {
    scenario.loop.steps = scenario.golden.steps +
                          steps_to_judge_memory(scenario.memory, scenario.loop.evaluation);
  }
  read_parameter_groups_section(root, scenario, trainer_optimizer.has_value());
  if (scenario.loop.lr_scheduler_step != LrSchedulerStepping::engine &&
      !scenario.deepspeed.scheduler) {
    loop.fail("lr_scheduler_step",
              "the DeepSpeed config has no \"scheduler\" block, so deepspeed.initialize returns "
              "no scheduler for the loop to step: add one, or remove this key");
  }
  scenario.device = root.optional_enum("device", DeviceChoice::cpu, device_choice_spellings());

  scenario.dtype = root.optional_enum("dtype", EngineDtype::float32, engine_dtype_spellings());
  const auto* user_model = std::get_if<TorchScriptOptions>(&scenario.model.options);
  if (user_model && !user_model->fixed_dtype_conversions.empty() &&
      scenario.dtype == EngineDtype::float64) {
    scenario.deepspeed.warnings.push_back(
        file + ":/model/options/file: the module's graph converts to a fixed floating dtype in " +
        user_model->fixed_dtype_conversions +
        " (torch.jit.trace records the dtype it traced with): this float64 run and its golden "
        "compute those values in that dtype, so they agree only as closely as it allows; run "
        "the scenario in float32, or script the model so it follows its inputs' dtype");
  }

  root.note_known("tolerance");
  if (root.has("tolerance")) {
    ObjectReader tolerance = root.required_object("tolerance");
    scenario.tolerance = read_tolerance(tolerance);
  }
  if (!scenario.measure_only) {
    ObjectReader expect = root.required_object("expect");
    scenario.expect = read_expectation(expect);
  }
  root.note_known("deepspeed_releases");
  if (root.has("deepspeed_releases")) {
    ObjectReader releases = root.required_object("deepspeed_releases");
    scenario.deepspeed_releases = read_release_outcomes(releases);
    // The setup is the user's correct one; only a DeepSpeed release with the bug fails it.
    if (scenario.expect.outcome != ExpectedOutcome::pass) {
      root.fail("deepspeed_releases",
                "a scenario of a DeepSpeed implementation bug describes a correct setup: its "
                "/expect/outcome must be \"pass\" (what the reference engine shows), and "
                "/deepspeed_releases/reproduced_as says what a release with the bug shows");
    }
  }
  scenario.performance = read_performance_section(root, document);

  root.reject_unknown_keys();
  return scenario;
}

}  // namespace trainrepro
