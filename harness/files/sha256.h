// SHA-256 (FIPS 180-4) of bytes and of files, so that a golden file can be pinned by its digest
// and a changed or half-copied golden is caught before any tensor in it is compared.
#pragma once
#include <string>
#include <string_view>

namespace trainrepro {

// 64 lowercase hex digits, as `sha256sum` and Python's hashlib.sha256(...).hexdigest() print.
std::string sha256_hex(std::string_view bytes);

// Streams the file, so goldens of any size hash in constant memory.
// Throws std::runtime_error "PATH: cannot read: <strerror>" when it cannot be opened or read.
std::string sha256_of_file(const std::string& path);

}  // namespace trainrepro
