#include "harness/watch/watch_launch.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "harness/distributed/process_tree.h"
#include "harness/files/atomic_write.h"
#include "harness/watch/watch_sources.h"

namespace trainrepro {

WatchLaunch launch_watched(const WatchSettings& settings, const PrivateFolder& folder) {
  const std::filesystem::path root(folder.path());
  const std::filesystem::path python = root / "python";
  const std::filesystem::path recordings = root / "recordings";
  std::filesystem::create_directories(python);
  std::filesystem::create_directories(recordings);
  for (const EmbeddedFile& source : watch_source_table()) {
    write_file_atomically(
        python / source.name,
        std::string_view(reinterpret_cast<const char*>(source.bytes), source.size));
  }
  // The command inherits this process's environment: the watch module first on the path, the
  // user's own PYTHONPATH after it.
  const char* user_path = std::getenv("PYTHONPATH");
  const std::string path = python.string() + (user_path != nullptr && *user_path != '\0'
                                                  ? ":" + std::string(user_path)
                                                  : std::string());
  ::setenv("PYTHONPATH", path.c_str(), 1);
  ::setenv("TRAINREPRO_WATCH_DIR", recordings.string().c_str(), 1);
  ::setenv("TRAINREPRO_WATCH_STEPS", std::to_string(settings.steps).c_str(), 1);
  ::setenv("TRAINREPRO_WATCH_MEMORY_STEPS", std::to_string(settings.memory_steps).c_str(), 1);
  ::setenv("TRAINREPRO_WATCH_SAVE", settings.save ? "1" : "0", 1);
  ::setenv("TRAINREPRO_WATCH_LOSS", settings.loss.c_str(), 1);
  ::setenv("TRAINREPRO_WATCH_GOLDEN", settings.golden.c_str(), 1);
  ::setenv("TRAINREPRO_WATCH_COORDINATES", std::to_string(settings.coordinates).c_str(), 1);
  // Which process the watched Pythons outlive only briefly (sitecustomize.py): this one, named
  // by pid and start time so that a later process given the same pid is not taken for it.
  const int64_t started = process_start_ticks(::getpid());
  if (started >= 0) {
    const std::string watcher = std::to_string(::getpid()) + ":" + std::to_string(started);
    ::setenv("TRAINREPRO_WATCH_PARENT", watcher.c_str(), 1);
  } else {
    ::unsetenv("TRAINREPRO_WATCH_PARENT");
  }
  WatchLaunch watched;
  watched.recordings_folder = recordings.string();
  watched.output_file = (root / "output.txt").string();
  watched.launch =
      launch_process_group(settings.command, settings.timeout_seconds, watched.output_file,
                           settings.echo_output ? &std::cout : nullptr);
  return watched;
}

}  // namespace trainrepro
