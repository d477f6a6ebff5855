// Reads a file in 64 KiB chunks, handing each to a callback: one place for the read loop and its
// errors, shared by checksumming and by reading golden files.
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace trainrepro {

// Throws std::runtime_error "PATH: cannot read: <reason>".
void for_each_file_chunk(const std::string& path,
                         const std::function<void(std::string_view chunk)>& consume);

}  // namespace trainrepro
