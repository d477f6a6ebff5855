#include "harness/scenario/parameter_groups.h"

#include <algorithm>
#include <optional>

#include "harness/json/printable.h"
#include "models/parameter_names.h"

namespace trainrepro {
namespace {

// A model with more parameter tensors than this cannot be trained here anyway; its names are
// not listed one by one to resolve groups.
constexpr int64_t kMostParameterNames = 1000000;

// One group as written: how it selects, and its weight decay.
struct GroupAsWritten {
  std::vector<std::string> params;            // names or module paths
  std::vector<std::string> names_containing;  // substrings
  bool rest = false;                          // neither: every parameter no other group holds
  double weight_decay = 0.0;
  double lr = 0.0;
};

// A number as JSON writes it (the shortest text that reads back the same: 2e-05).
std::string number_text(double value) { return nlohmann::json(value).dump(); }

bool selects(const GroupAsWritten& group, const std::string& name) {
  const auto within = [&](const std::string& entry) { return name_is_within(name, entry); };
  const auto contains = [&](const std::string& part) {
    return name.find(part) != std::string::npos;
  };
  return std::any_of(group.params.begin(), group.params.end(), within) ||
         std::any_of(group.names_containing.begin(), group.names_containing.end(), contains);
}

// `all`: every parameter name of the model, listed once by the caller for every group.
GroupAsWritten read_group(ObjectReader& group, const ParameterNaming& naming,
                          const std::vector<std::string>& all, const OptimizerConfig& optimizer,
                          std::vector<std::string>& warnings) {
  GroupAsWritten read;
  read.params = group.optional_string_list("params");
  read.names_containing = group.optional_string_list("names_containing");
  if (group.has("params") && group.has("names_containing")) {
    group.fail("names_containing", "a group selects by \"params\" or by \"names_containing\", "
                                   "not both: split it into two groups");
  }
  if ((group.has("params") && read.params.empty()) ||
      (group.has("names_containing") && read.names_containing.empty())) {
    group.fail(group.has("params") ? "params" : "names_containing",
               "expected at least one entry (leave the key out for the group of every "
               "parameter no other group holds)");
  }
  read.rest = !group.has("params") && !group.has("names_containing");
  const std::string names = describe_parameter_names(naming);
  for (size_t i = 0; i < read.params.size(); ++i) {
    if (!selects_a_parameter(naming, read.params[i])) {
      group.fail_at("/params/" + std::to_string(i),
                    "expected the name of a parameter or of a module holding some (as "
                    "named_parameters() writes them), found \"" + printable(read.params[i]) +
                        "\"; this model's parameters: " + names);
    }
  }
  for (size_t i = 0; i < read.names_containing.size(); ++i) {
    const std::string& part = read.names_containing[i];
    const bool matches = std::any_of(all.begin(), all.end(), [&](const std::string& name) {
      return name.find(part) != std::string::npos;
    });
    if (!matches) {
      // Legal Python that selects nothing: the classic "LayerNorm.weight" of a model whose
      // LayerNorms are named otherwise, which leaves them decayed.
      warnings.push_back(group.file() + ":" + group.pointer_to("names_containing") + "/" +
                         std::to_string(i) +
                         ": \"" + printable(part) + "\" is in no parameter's name, so it selects "
                         "nothing; this model's parameters: " + names);
    }
  }
  read.weight_decay = group.optional_number("weight_decay", optimizer.weight_decay, 0.0);
  read.lr = group.optional_number("lr", optimizer.lr, 0.0);
  group.reject_unknown_keys();
  return read;
}

}  // namespace

std::vector<ParameterGroup> read_parameter_groups(ObjectReader& root, const ModelOptions& model,
                                                  const std::vector<std::string>& frozen,
                                                  const OptimizerConfig& optimizer,
                                                  std::vector<std::string>& warnings) {
  root.note_known("parameter_groups");
  const nlohmann::json& value = root.required_value("parameter_groups");
  if (!value.is_array() || value.empty()) {
    root.fail("parameter_groups",
              "expected a non-empty array of groups ({\"params\": [names], \"weight_decay\": "
              "0.0}, {\"names_containing\": [\"bias\"]}, or {} for the rest), found " +
                  describe_json_value(value));
  }
  const ParameterNaming naming = parameter_naming(model);
  const int64_t count = static_cast<int64_t>(naming.before.size() + naming.after.size()) +
                        naming.repeats * static_cast<int64_t>(naming.inside.size());
  if (count > kMostParameterNames) {
    root.fail("parameter_groups", "this model has " + std::to_string(count) +
                                      " parameter tensors, more than parameter groups are "
                                      "resolved for (" + std::to_string(kMostParameterNames) + ")");
  }

  const std::vector<std::string> all = all_parameter_names(naming);
  std::vector<GroupAsWritten> groups;
  std::optional<size_t> rest_group;
  for (size_t g = 0; g < value.size(); ++g) {
    const std::string pointer = root.pointer_to("parameter_groups") + "/" + std::to_string(g);
    ObjectReader group(value[g], root.file(), pointer);
    groups.push_back(read_group(group, naming, all, optimizer, warnings));
    if (groups.back().rest) {
      if (rest_group) {
        group.fail("", "a second group without \"params\" or \"names_containing\": group " +
                           std::to_string(*rest_group) + " already holds every parameter no "
                           "other group holds");
      }
      rest_group = g;
    }
  }

  // DeepSpeed keeps the trainable parameters of each group (requires_grad False is dropped).
  std::vector<ParameterGroup> resolved(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    resolved[g].weight_decay = groups[g].weight_decay;
    resolved[g].lr = groups[g].lr;
  }
  const auto group_pointer = [&](size_t g) { return "/parameter_groups/" + std::to_string(g); };
  for (const std::string& name : all) {
    const bool is_frozen = std::any_of(frozen.begin(), frozen.end(), [&](const std::string& e) {
      return name_is_within(name, e);
    });
    if (is_frozen) continue;
    std::optional<size_t> holder;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].rest || !selects(groups[g], name)) continue;
      if (holder) {
        root.fail_at(group_pointer(g),
                     "parameter \"" + name + "\" is in group " + std::to_string(*holder) +
                         " and in this one (torch.optim refuses it: \"some parameters appear "
                         "in more than one parameter group\")");
      }
      holder = g;
    }
    if (!holder && !rest_group) {
      root.fail("parameter_groups",
                "trainable parameter \"" + name + "\" is in no group, so the optimizer would "
                "never update it: add a group without \"params\" for every parameter the others "
                "leave out (or freeze it in model.frozen)");
    }
    resolved[holder ? *holder : *rest_group].names.push_back(name);
  }
  for (size_t g = 0; g < resolved.size(); ++g) {
    if (resolved[g].names.empty()) {
      root.fail_at(group_pointer(g),
                   groups[g].rest ? "this group holds no parameter: the other groups hold every "
                                    "trainable one; remove it"
                                  : "this group holds no trainable parameter (it selects none, "
                                    "or only frozen ones): remove it; this model's parameters: " +
                                        describe_parameter_names(naming));
    }
  }
  return resolved;
}

std::optional<std::string> overwritten_group_lrs(const std::string& where,
                                                 const std::vector<ParameterGroup>& groups,
                                                 double optimizer_lr, const LrSchedule& schedule) {
  // lr_schedules.py: WarmupLR and WarmupDecayLR take one warmup_max_lr for every group unless
  // WarmupLR is left to read each group's lr; OneCycle one cycle_min_lr/cycle_max_lr.
  std::string rate;
  if (schedule.kind == LrScheduleKind::one_cycle) {
    rate = "cycles one rate between cycle_min_lr " + number_text(schedule.one_cycle.cycle_min_lr) +
           " and cycle_max_lr " + number_text(schedule.one_cycle.cycle_max_lr);
  } else if (schedule.kind != LrScheduleKind::warmup_cosine_lr && schedule.warmup_max_lr) {
    rate = "warms up to one rate, warmup_max_lr " + number_text(*schedule.warmup_max_lr) +
           (schedule.kind == LrScheduleKind::warmup_decay_lr ? ", then decays it," : ",");
  } else {
    return std::nullopt;
  }
  std::string asked;
  bool differ = false;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].lr != groups.front().lr) differ = true;
    if (groups[g].lr != optimizer_lr) {
      asked += (asked.empty() ? "" : ", ") + std::string("group ") + std::to_string(g) + " " +
               number_text(groups[g].lr);
    }
  }
  if (!differ && asked.empty()) return std::nullopt;
  return where + ": the param groups' own learning rates (" + asked +
         ") are overwritten: DeepSpeed's " + schedule.type_as_written + " " + rate +
         " in every param group, from its construction on, so every group trains at the same "
         "rate. WarmupCosineLR (which scales each group's lr) or WarmupLR without warmup_max_lr "
         "keep them apart";
}

}  // namespace trainrepro
