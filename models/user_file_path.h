// Files a scenario names (a user's TorchScript model, a user's samples) are found relative to the
// scenario file's folder, so a scenario and its files travel together.
#pragma once
#include <string>

#include "harness/json/json_fields.h"

namespace trainrepro {

struct UserFile {
  std::string as_written;  // what the scenario says: keys the golden with the file's digest
  std::string path;        // where it is read
  std::string sha256;      // of its bytes: a changed file is a changed golden
};

// Reads `key` of `options` as a path to a regular file, resolves it against the scenario's
// folder and hashes it. Fails at `key` when it is missing, not a regular file or unreadable.
UserFile read_user_file(ObjectReader& options, const std::string& key, const std::string& what);

}  // namespace trainrepro
