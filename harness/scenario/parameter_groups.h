// A scenario's "parameter_groups": the param groups a training script builds itself and hands to
// deepspeed.initialize(model_parameters=groups) (or to its client optimizer), most often the
// "no decay for biases and LayerNorm" idiom of DeepSpeedExamples and Megatron:
//   "parameter_groups": [
//     {"weight_decay": 0.1},                                        // every parameter not below
//     {"names_containing": ["bias", "ln"], "weight_decay": 0.0}     // any(nd in n for nd in ...)
//   ]
// A group selects by "params" (names or module paths of named_parameters(), as model.frozen
// does), by "names_containing" (Python's substring test), or by neither: the rest. Each group's
// "weight_decay" and "lr" override the optimizer's (their defaults), as torch.optim and
// DeepSpeed's fused optimizers read them per group (LLaVA's mm_projector_lr is such a group). DeepSpeed 0.19.8 keeps only trainable parameters in the groups
// (frozen ones are dropped), and ZeRO 1-2 flatten each group on its own.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/json/json_fields.h"
#include "harness/scenario/deepspeed_config.h"
#include "harness/scenario/lr_schedule.h"
#include "models/model_zoo.h"

namespace trainrepro {

// Reads root["parameter_groups"] and resolves every group to the trainable parameters' names,
// in named_parameters() order. Located errors for what torch.optim or DeepSpeed refuse (a
// parameter in two groups) and for what would silently train wrong: a trainable parameter in no
// group (never updated), a group that holds none, a "params" entry naming no parameter, a key of
// a group the reference engine does not model ("lr"). A substring that matches no name is legal
// Python: it goes to `warnings`, with this model's names. A group's "weight_decay" and "lr"
// default to the optimizer's.
std::vector<ParameterGroup> read_parameter_groups(ObjectReader& root, const ModelOptions& model,
                                                  const std::vector<std::string>& frozen,
                                                  const OptimizerConfig& optimizer,
                                                  std::vector<std::string>& warnings);

// The warning for groups whose own "lr" the config's scheduler overwrites (one rate written
// into every group: WarmupLR with warmup_max_lr, WarmupDecayLR, OneCycle), or none.
std::optional<std::string> overwritten_group_lrs(const std::string& where,
                                                 const std::vector<ParameterGroup>& groups,
                                                 double optimizer_lr, const LrSchedule& schedule);

}  // namespace trainrepro
