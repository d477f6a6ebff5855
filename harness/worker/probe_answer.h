// What a worker Python answers when asked for its torch and deepspeed: the probe program it runs
// writes its answer into a JSON file, so that whatever a release logs on import (DeepSpeed 0.17.5
// prints an INFO line on stdout) cannot be taken for the answer, and a Python that cannot serve
// says why: what it lacks and the exception's last line, or how it ended and what it printed.
#pragma once
#include <optional>
#include <string>

#include "harness/distributed/rank_launcher.h"
#include "harness/worker/worker_trace.h"

namespace trainrepro {

// `python -c kProbeProgram ENGINE ANSWER_FILE`: ENGINE is deepspeed or fsdp2; writes
// {"engine", "torch", "python", "deepspeed"} or {"missing": what, "error": its exception's last
// line}, atomically.
extern const char* const kProbeProgram;

// The versions in `answer_text` (the answer file's content, nullopt when none was written), or
// DeepSpeedPythonError naming `named` and why, never an empty reason. `option` starts the
// message ("--engine deepspeed"); `launch` is how the probe ended.
WorkerVersions read_probe_answer(const std::optional<std::string>& answer_text,
                                 const RankLaunch& launch, const std::string& option,
                                 const std::string& named, const std::string& engine,
                                 int probe_timeout_seconds);

}  // namespace trainrepro
