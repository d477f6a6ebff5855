// Writes a file so that readers see either the old content or the new, never half of it:
// write a temporary file in the same folder, flush it to disk, then rename it into place.
// Results and goldens are written this way; an interrupted run leaves nothing half-written.
#pragma once
#include <filesystem>
#include <string_view>

namespace trainrepro {

// Creates missing parent folders. Throws std::runtime_error starting with the path.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace trainrepro
