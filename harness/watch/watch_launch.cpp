#include "harness/watch/watch_launch.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>

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
  WatchLaunch watched;
  watched.recordings_folder = recordings.string();
  watched.output_file = (root / "output.txt").string();
  watched.launch =
      launch_process_group(settings.command, settings.timeout_seconds, watched.output_file);
  return watched;
}

}  // namespace trainrepro
