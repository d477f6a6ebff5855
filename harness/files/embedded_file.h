// A file compiled into the binary by cmake/embed_files.cmake, so the binary needs nothing beside
// it at run time (the HTML report's assets, the sources `trainrepro export` writes out).
#pragma once
#include <cstddef>

namespace trainrepro {

struct EmbeddedFile {
  const char* name;  // the file's name without its folder: "report.js"
  const unsigned char* bytes;
  size_t size;
};

}  // namespace trainrepro
