#include "harness/cli/repro_script.h"

#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/cli/export_sources.h"
#include "harness/cli/python_literal.h"
#include "harness/scenario/settings_acting_outside_the_run.h"

namespace trainrepro {

const char kExportedDataPlaceholder[] = "__EXPORTED_DATA__";

namespace {

std::string embedded(const std::string& name) {
  for (const ExportSource& source : export_source_table()) {
    if (name == source.name) {
      return std::string(reinterpret_cast<const char*>(source.bytes), source.size);
    }
  }
  throw std::logic_error("export: no embedded source " + name);
}

// trainrepro's own Python, placed inside r'''…''' by the template: it must not end that literal.
std::string raw_literal_body(const std::string& name) {
  const std::string source = embedded(name);
  if (source.find("'''") != std::string::npos || (!source.empty() && source.back() == '\\')) {
    throw std::logic_error("export: " + name +
                           " holds ''' or ends in a backslash, which the "
                           "template's r'''…''' cannot hold");
  }
  return source;
}

// Each placeholder replaced in one pass over the template: text put in is never searched again,
// so a value that happens to spell a placeholder stays as it is.
std::string fill_template(const std::string& text,
                          const std::vector<std::pair<std::string, std::string>>& values) {
  std::string filled;
  size_t from = 0;
  while (true) {
    size_t nearest = std::string::npos;
    const std::pair<std::string, std::string>* chosen = nullptr;
    for (const auto& value : values) {
      const size_t at = text.find(value.first, from);
      if (at < nearest) nearest = at, chosen = &value;
    }
    if (chosen == nullptr) break;
    filled.append(text, from, nearest - from).append(chosen->second);
    from = nearest + chosen->first.size();
  }
  return filled.append(text, from, std::string::npos);
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// The text with every byte sequence that is not UTF-8 shown as U+FFFD (a path on Linux is bytes).
std::string as_utf8(const std::string& text) {
  const std::string quoted =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

// What the real DeepSpeed the script runs would do outside the run (import code, write where the
// config says, go online): the same list every real-engine run refuses
// (harness/scenario/settings_acting_outside_the_run.h).
std::optional<std::string> reaches_outside_the_run(const nlohmann::json& raw) {
  const nlohmann::json config = raw.value("deepspeed", nlohmann::json::object());
  const std::vector<SettingOutsideTheRun> found = settings_acting_outside_the_run(config);
  if (found.empty()) return std::nullopt;
  return "/deepspeed" + found.front().pointer + ": " + found.front().effect +
         "; the script runs the config as given, so it is not exported with this setting "
         "(remove it from the scenario to export it)";
}

}  // namespace

// What the exported loop does not do (yet), said with the key that asks for it. The script
// drives the oracle's loop: built-in models and generated data, fp32 or bf16 on the CPU, the
// accumulation habits; memory is not measured there.
std::optional<std::string> not_exportable(const Scenario& scenario, const nlohmann::json& raw) {
  const std::string where = scenario.file + ":";
  if (std::holds_alternative<TorchScriptOptions>(scenario.model.options)) {
    return where +
           "/model/name: export --python writes the built-in models only (your "
           "TorchScript model is not exported yet)";
  }
  if (std::holds_alternative<SafetensorsData>(scenario.data.options)) {
    return where +
           "/data/name: export --python writes generated data only (your samples "
           "file is not exported yet)";
  }
  if (raw.contains("hf_trainer")) {
    return where +
           "/hf_trainer: the config holds \"auto\" values the Trainer fills; export "
           "the config as the Trainer fills it (trainrepro run prints it) instead";
  }
  if (scenario.expect.outcome == ExpectedOutcome::config_error) {
    return where +
           "/expect/outcome: DeepSpeed refuses this config; `trainrepro config "
           "resolve` shows it without a script";
  }
  if (scenario.loop.keep != KeepHabit::nothing || scenario.loop.evaluation) {
    return where +
           "/loop: memory reproductions (keep, evaluation) are not exported: the "
           "script compares gradients only";
  }
  if (raw.contains("/deepspeed/fp16/enabled"_json_pointer) &&
      raw.at("/deepspeed/fp16/enabled"_json_pointer) == true) {
    return where +
           "/deepspeed/fp16/enabled: DeepSpeed refuses fp16 on a CPU; the script "
           "runs on the CPU";
  }
  if (scenario.deepspeed.bf16_enabled) {
    return where +
           "/deepspeed/bf16: a bf16 run is judged against its precision twin (the same "
           "run in float32 semantics), which the script does not compute; it compares "
           "with float32 tolerance only";
  }
  // Verdicts about the update (learning rate, optimizer state), not the accumulated gradients:
  // the script compares gradients, so it would show these runs agreeing.
  if (scenario.expect.diagnosis) {
    switch (*scenario.expect.diagnosis) {
      case DiagnosisKind::lr_scheduler_stepped_every_micro_step:
      case DiagnosisKind::scheduler_start_rate_first_group_only:
      case DiagnosisKind::lamb_trust_ratio_over_partition:
      case DiagnosisKind::optimizer_stepped_at_initialization:
      case DiagnosisKind::training_diverged:
      case DiagnosisKind::model_states_differ_from_zero:
      case DiagnosisKind::traffic_differs_from_zero:
        return where +
               "/expect/diagnosis: this verdict is about the update or the engine's "
               "state, not the accumulated gradients the script compares";
      default:
        break;
    }
  }
  if (auto outside = reaches_outside_the_run(raw)) return where + *outside;
  return std::nullopt;
}

std::string repro_script_frame() {
  const std::string frame = fill_template(
      embedded("repro_main.py"), {{"__VERSION__", TRAINREPRO_VERSION},
                                  {"__ZOO_SOURCE__", raw_literal_body("zoo.py")},
                                  {"__LOOP_PIECES_SOURCE__", raw_literal_body("loop_pieces.py")},
                                  {"__WORKER_SOURCE__", raw_literal_body("ds_worker.py")}});
  if (count_of(frame, kExportedDataPlaceholder) != 1) {
    throw std::logic_error(std::string("export: the script's frame must hold ") +
                           kExportedDataPlaceholder + " exactly once");
  }
  return frame;
}

nlohmann::json exported_data(const Scenario& scenario, const nlohmann::json& raw,
                             const std::string& source_file) {
  std::string expected = "pass (the gradients should agree)";
  if (scenario.expect.outcome != ExpectedOutcome::pass) {
    expected = "diagnosis " +
               (scenario.expect.diagnosis
                    ? std::string(spelling_of(*scenario.expect.diagnosis, diagnosis_spellings()))
                    : std::string("?"));
  }
  return {{"scenario", raw}, {"source", as_utf8(source_file)}, {"expected", expected}};
}

std::string exported_data_literals(const nlohmann::json& data) {
  // Pretty-printed JSON breaks lines only between values (a line break inside a string is
  // written \n), so each line is one literal and the script shows the scenario line by line.
  const std::string text = data.dump(2);
  std::string literals;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = text.find('\n', begin);
    const size_t next = end == std::string::npos ? text.size() : end + 1;
    if (!literals.empty()) literals += '\n';
    literals += "    " + python_string_literal(std::string_view(text).substr(begin, next - begin));
    begin = next;
  }
  return literals;
}

std::string repro_script(const nlohmann::json& data) {
  std::string script = repro_script_frame();
  const size_t at = script.find(kExportedDataPlaceholder);
  return script.replace(at, std::string(kExportedDataPlaceholder).size(),
                        exported_data_literals(data));
}

}  // namespace trainrepro
