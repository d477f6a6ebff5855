#include "harness/worker/probe_answer.h"

#include <nlohmann/json.hpp>

#include "harness/json/printable.h"
#include "harness/worker/deepspeed_worker.h"

namespace trainrepro {

// torch first: deepspeed cannot be imported without it, and saying "deepspeed is missing" would
// mislead. FSDP2 is torch's fully_shard (torch 2.6 and later). BaseException: a SystemExit or a
// KeyboardInterrupt raised by an import is a reason too.
const char* const kProbeProgram = R"py(import json, os, platform, sys, traceback
engine, answer_path = sys.argv[1], sys.argv[2]
def answer(found):
    with open(answer_path + ".partial", "w") as file:
        json.dump(found, file)
    os.replace(answer_path + ".partial", answer_path)
def last_line(error):
    return traceback.format_exception_only(type(error), error)[-1].strip()
try:
    import torch
except BaseException as error:
    answer({"missing": "torch", "error": last_line(error)})
    sys.exit(3)
found = {"engine": engine, "torch": torch.__version__.split("+")[0],
         "python": platform.python_version()}
try:
    if engine == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        import safetensors
    else:
        import deepspeed
        found["deepspeed"] = str(deepspeed.__version__)
except BaseException as error:
    what = "torch.distributed.fsdp.fully_shard or safetensors" if engine == "fsdp2" else engine
    answer({"missing": what, "error": last_line(error)})
    sys.exit(3)
answer(found)
)py";

namespace {

std::string how_it_ended(const RankLaunch& launch, int probe_timeout_seconds) {
  if (launch.timed_out) {
    return " did not answer within " + std::to_string(probe_timeout_seconds) +
           " s (--rank-timeout)";
  }
  if (launch.killed_by != 0) {
    return " was killed by signal " + std::to_string(launch.killed_by) + " before answering";
  }
  return " exited with code " + std::to_string(launch.exit_code) + " without answering";
}

std::string text_of(const nlohmann::json& answer, const char* key) {
  const auto found = answer.find(key);
  return found != answer.end() && found->is_string() ? found->get<std::string>() : "";
}

}  // namespace

WorkerVersions read_probe_answer(const std::optional<std::string>& answer_text,
                                 const RankLaunch& launch, const std::string& option,
                                 const std::string& named, const std::string& engine,
                                 int probe_timeout_seconds) {
  const std::string asked =
      " when asked for its torch" + std::string(engine == "deepspeed" ? " and deepspeed" : "");
  if (!answer_text) {
    const std::string output = printable_output_tail(launch.output);
    throw DeepSpeedPythonError(
        option + ": " + named + how_it_ended(launch, probe_timeout_seconds) + asked +
        (output.empty() ? ", and printed nothing" : "; its output ended with:\n" + output));
  }
  const nlohmann::json answer = nlohmann::json::parse(*answer_text, nullptr, false);
  if (!answer.is_object()) {
    throw DeepSpeedPythonError(option + ": " + named + " answered " +
                               printable_excerpt(*answer_text, 200) + asked);
  }
  const std::string missing = text_of(answer, "missing");
  if (!missing.empty()) {
    const std::string error = text_of(answer, "error");
    throw DeepSpeedPythonError(option + ": " + named + " has no " + printable(missing) + " (" +
                               (error.empty() ? "no reason given" : printable(error)) +
                               "); install it into that Python, or name one that has it");
  }
  WorkerVersions versions{text_of(answer, "deepspeed"), text_of(answer, "torch"),
                          text_of(answer, "python"), engine};
  if (versions.torch.empty() || (engine == "deepspeed" && versions.deepspeed.empty())) {
    throw DeepSpeedPythonError(option + ": " + named + " answered without the versions" + asked +
                               ": " + printable_excerpt(*answer_text, 200));
  }
  return versions;
}

}  // namespace trainrepro
