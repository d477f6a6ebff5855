#include "harness/scenario/settings_acting_outside_the_run.h"

#include <algorithm>
#include <cctype>

namespace trainrepro {
namespace {

using Pointer = nlohmann::json::json_pointer;

const nlohmann::json* value_at(const nlohmann::json& config, const std::string& pointer) {
  const Pointer at(pointer);
  return config.contains(at) ? &config.at(at) : nullptr;
}

// A dict section read with `dict.get(key)` and tested with `if value:` (flops_profiler,
// autotuning, torch_autocast): Python's truth, so "false" and "auto" are true there.
bool true_to_python(const nlohmann::json* value) {
  if (value == nullptr || value->is_null()) return false;
  if (value->is_boolean()) return value->get<bool>();
  if (value->is_number()) return *value != 0;
  if (value->is_string()) return !value->get_ref<const std::string&>().empty();
  return !value->empty();  // a list or object (json::empty() is false for any string)
}

// A pydantic `bool` field (tensorboard, csv_monitor, wandb, comet): DeepSpeedConfigModel drops
// "auto" before validation (the default, false, stays); pydantic's lax mode takes true, 1 and
// the strings below; anything else is false or a validation error (DeepSpeed stops first).
bool true_to_pydantic(const nlohmann::json* value) {
  if (value == nullptr) return false;
  if (value->is_boolean()) return value->get<bool>();
  if (value->is_number()) return *value == 1;
  if (!value->is_string()) return false;
  std::string text = value->get<std::string>();
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text == "1" || text == "on" || text == "t" || text == "true" || text == "y" ||
         text == "yes";
}

// A string value shown in a message: JSON-quoted, so control bytes and odd UTF-8 stay inert.
std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A string value as DeepSpeed reads it (pydantic `str` with "auto" dropped), or `fallback`.
std::string text_or(const nlohmann::json* value, const std::string& fallback) {
  return value != nullptr && value->is_string() && *value != "auto" ? value->get<std::string>()
                                                                    : fallback;
}

// Where a monitor writes: os.path.join(output_path, job_name), relative to the current folder
// when output_path is "" (its default), anywhere when job_name is absolute.
std::string monitor_folder(const nlohmann::json& config, const std::string& section) {
  const std::string path = text_or(value_at(config, "/" + section + "/output_path"), "");
  const std::string job = text_or(value_at(config, "/" + section + "/job_name"), "DeepSpeedJobName");
  if (!job.empty() && job.front() == '/') return json_text(nlohmann::json(job));
  if (path.empty()) return json_text(nlohmann::json(job)) + " in the current folder (output_path's default, \"\")";
  return json_text(nlohmann::json(path + (path.back() == '/' ? "" : "/") + job));
}

// torch_autocast.lower_precision_safe_modules: DeepSpeed imports the part before the last dot of
// each name. torch.nn's own classes (DeepSpeed's default list) import torch.nn, which the run has
// imported already; any other name may be any importable module, whose top level then runs.
std::optional<std::string> first_foreign_module(const nlohmann::json* names) {
  if (names == nullptr || !names->is_array()) return std::nullopt;
  for (const nlohmann::json& name : *names) {
    if (!name.is_string()) continue;  // DeepSpeed refuses the list before importing anything
    const std::string text = name.get<std::string>();
    const size_t dot = text.rfind('.');
    const std::string module = dot == std::string::npos ? text : text.substr(0, dot);
    if (module != "torch.nn" && module.rfind("torch.nn.", 0) != 0) return json_text(name);
  }
  return std::nullopt;
}

void add_nvme_offload(const nlohmann::json& config, const std::string& section,
                      const std::string& what, std::vector<SettingOutsideTheRun>& found) {
  const std::string base = "/zero_optimization/" + section;
  const nlohmann::json* device = value_at(config, base + "/device");
  const nlohmann::json* path = value_at(config, base + "/nvme_path");
  if (device == nullptr || *device != "nvme" || path == nullptr || !path->is_string() ||
      *path == "auto") {
    return;  // without a path DeepSpeed fails before writing (None joined to a path)
  }
  found.push_back({base + "/nvme_path", what + " " + json_text(*path) +
                                            " (\"\" is the current folder) "
                                            "(deepspeed/runtime/swap_tensor, zero/stage3.py)"});
}

}  // namespace

std::vector<SettingOutsideTheRun> settings_acting_outside_the_run(const nlohmann::json& config) {
  std::vector<SettingOutsideTheRun> found;
  if (!config.is_object()) return found;
  if (true_to_python(value_at(config, "/torch_autocast/enabled"))) {
    if (auto module = first_foreign_module(
            value_at(config, "/torch_autocast/lower_precision_safe_modules"))) {
      found.push_back({"/torch_autocast/lower_precision_safe_modules",
                       "DeepSpeed imports the module of every name listed here (" + *module +
                           "), which runs that module's top-level code "
                           "(deepspeed/runtime/torch_autocast.py, init_autocast_params)"});
    }
  }
  const bool autotuning = true_to_python(value_at(config, "/autotuning/enabled"));
  const nlohmann::json* output_file = value_at(config, "/flops_profiler/output_file");
  if ((true_to_python(value_at(config, "/flops_profiler/enabled")) || autotuning) &&
      true_to_python(output_file)) {
    found.push_back({"/flops_profiler/output_file",
                     "DeepSpeed's flops profiler creates the folder of " + json_text(*output_file) +
                         " and overwrites that file with its report at profile_step "
                         "(deepspeed/profiling/flops_profiler/profiler.py, print_model_profile); "
                         "without output_file it prints to stdout"});
  }
  if (autotuning) {
    const nlohmann::json* metric = value_at(config, "/autotuning/metric_path");
    found.push_back(
        {"/autotuning/enabled",
         "DeepSpeed writes its metrics to " +
             (true_to_python(metric) ? json_text(*metric)
                                     : std::string("autotuning_metric.json in the current folder")) +
             " at end_profile_step, and with model_info.profile writes model_info_path "
             "(autotuning_model_info.json in the current folder) and exits the process "
             "(deepspeed/runtime/engine.py, _autotuning_exit)"});
  }
  if (true_to_pydantic(value_at(config, "/tensorboard/enabled"))) {
    found.push_back({"/tensorboard/enabled", "DeepSpeed creates the folder " +
                                                 monitor_folder(config, "tensorboard") +
                                                 " and writes TensorBoard event files there "
                                                 "(deepspeed/monitor/tensorboard.py)"});
  }
  if (true_to_pydantic(value_at(config, "/csv_monitor/enabled"))) {
    found.push_back({"/csv_monitor/enabled", "DeepSpeed creates the folder " +
                                                 monitor_folder(config, "csv_monitor") +
                                                 " and appends CSV files there "
                                                 "(deepspeed/monitor/csv_monitor.py)"});
  }
  if (true_to_pydantic(value_at(config, "/wandb/enabled"))) {
    found.push_back({"/wandb/enabled",
                     "DeepSpeed logs the run to Weights & Biases (wandb.init with the config's "
                     "project, team and group, and your credentials) (deepspeed/monitor/wandb.py)"});
  }
  if (true_to_pydantic(value_at(config, "/comet/enabled"))) {
    found.push_back({"/comet/enabled",
                     "DeepSpeed logs the run to Comet (comet_ml with the config's api_key, "
                     "workspace and project, or your own) (deepspeed/monitor/comet.py)"});
  }
  add_nvme_offload(config, "offload_optimizer",
                   "DeepSpeed writes optimizer-state swap files under", found);
  add_nvme_offload(config, "offload_param",
                   "DeepSpeed deletes and re-creates zero_stage_3/<dtype>params/rank<r> and "
                   "writes parameter swap files there, under",
                   found);
  return found;
}

std::optional<std::string> refuse_settings_acting_outside_the_run(const Scenario& scenario,
                                                                  const std::string& refuser) {
  const std::vector<SettingOutsideTheRun> found =
      settings_acting_outside_the_run(scenario.deepspeed.received);
  if (found.empty()) return std::nullopt;
  return scenario.file + ":/deepspeed" + found.front().pointer + ": " + found.front().effect +
         "; a scenario must not choose what DeepSpeed imports, writes or logs to on this "
         "machine, so " + refuser +
         " does not run it (turn the setting off or remove it; the reference engine runs the "
         "scenario as it is: it never acts on this setting)";
}

}  // namespace trainrepro
