#include "harness/worker/unrunnable_releases.h"

#include "harness/scenario/deepspeed_release.h"

namespace trainrepro {
namespace {

// A span of releases that cannot run from a torch release on. Found by the sweep of every final
// release from 0.14.0 (docs/releases.md, "Which releases run here"), each cause read from the
// error and DeepSpeed's source.
struct UnrunnableReleases {
  const char* first;       // the oldest release of the span
  const char* last;        // the newest
  const char* torch_from;  // the first torch release on which they cannot run
  const char* reason;
};

constexpr UnrunnableReleases kUnrunnable[] = {
    {"0.14.0", "0.14.0", "2.9.0",
     "with DS_ACCELERATOR=cpu (how trainrepro trains on a CPU) its "
     "accelerator/real_accelerator.py imports intel_extension_for_pytorch or raises "
     "\"CPU_Accelerator requires intel_extension_for_pytorch, which is not installed on this "
     "system\", already in setup.py; that extension's last release, 2.8.0, is built for torch "
     "2.8. 0.14.1 takes the CPU accelerator without it"},
    {"0.14.1", "0.14.3", "2.4.0",
     "deepspeed/elasticity/elastic_agent.py imports _get_socket_with_port from "
     "torch.distributed.elastic.agent.server.api, which torch removed in 2.4 (pytorch PR "
     "#125743): `import deepspeed` fails with ImportError; DeepSpeed PR #5654 (get_free_port) "
     "fixed it in 0.14.4"},
};

}  // namespace

std::optional<std::string> why_release_cannot_run(const std::string& release,
                                                  const std::string& torch_version) {
  for (const UnrunnableReleases& span : kUnrunnable) {
    if (release_older(release, span.first) || release_older(span.last, release)) continue;
    if (release_older(torch_version, span.torch_from)) continue;
    return "DeepSpeed " + release + " cannot run over torch " + torch_version + ": " + span.reason;
  }
  return std::nullopt;
}

}  // namespace trainrepro
