// The safetensors format: an 8-byte little-endian header length N, N bytes of JSON header padded
// with spaces to a multiple of 8, then the tensors' bytes, contiguous, row-major, little-endian.
#include "harness/files/safetensors.h"

#include <ATen/ops/empty.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "harness/files/atomic_write.h"
#include "harness/files/file_chunks.h"

// Tensor bytes are copied as they lie in memory, and the format is little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O assumes a little-endian host");

namespace trainrepro {
namespace {

// ordered_json keeps the header's key order, which breaks ties between empty tensors (they share
// an offset) so that names come back in the order they were written.
using Json = nlohmann::ordered_json;

// The reference implementation refuses longer headers; a larger length means a corrupt file.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kLengthPrefixBytes = 8;
constexpr const char* kMetadataKey = "__metadata__";

struct DtypeInfo {
  const char* name;
  at::ScalarType type;
  uint64_t element_bytes;
};

// The format's other dtypes (F8_*, U16, U32, U64, ...) have no use in goldens yet, and LibTorch
// supports few operators on them.
constexpr std::array<DtypeInfo, 10> kDtypes = {{
    {"F64", at::kDouble, 8},
    {"F32", at::kFloat, 4},
    {"F16", at::kHalf, 2},
    {"BF16", at::kBFloat16, 2},
    {"I64", at::kLong, 8},
    {"I32", at::kInt, 4},
    {"I16", at::kShort, 2},
    {"I8", at::kChar, 1},
    {"U8", at::kByte, 1},
    {"BOOL", at::kBool, 1},
}};

const DtypeInfo* find_dtype(std::string_view name) {
  for (const DtypeInfo& dtype : kDtypes) {
    if (name == dtype.name) return &dtype;
  }
  return nullptr;
}

const DtypeInfo* find_dtype(at::ScalarType type) {
  for (const DtypeInfo& dtype : kDtypes) {
    if (type == dtype.type) return &dtype;
  }
  return nullptr;
}

std::string supported_dtype_names() {
  std::string names;
  for (const DtypeInfo& dtype : kDtypes) {
    names += std::string(names.empty() ? "" : ", ") + dtype.name;
  }
  return names;
}

template <typename Number>
std::string format_list(const std::vector<Number>& numbers) {
  std::string text = "[";
  for (size_t i = 0; i < numbers.size(); ++i) text += (i ? ", " : "") + std::to_string(numbers[i]);
  return text + "]";
}

std::string quoted(const std::string& name) { return "\"" + name + "\""; }

std::string encode_header(const Json& header) {
  try {
    return header.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::strict);
  } catch (const Json::type_error& error) {
    throw std::invalid_argument(std::string("safetensors: tensor names and metadata must be valid "
                                            "UTF-8: ") +
                                error.what());
  }
}

// nlohmann::json keeps the last of two equal keys without a word; in a header that would hide a
// tensor, so every object's keys are tracked while parsing and a repeat is an error.
class RepeatedKeyFinder {
 public:
  bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) open_objects_.emplace_back();
    if (event == Json::parse_event_t::object_end) open_objects_.pop_back();
    if (event == Json::parse_event_t::key && repeated_key_.empty() &&
        !open_objects_.back().insert(parsed.get<std::string>()).second) {
      repeated_key_ = parsed.get<std::string>();
    }
    return true;
  }
  const std::string& repeated_key() const { return repeated_key_; }

 private:
  std::vector<std::set<std::string>> open_objects_;
  std::string repeated_key_;
};

struct TensorEntry {
  std::string name;
  const DtypeInfo* dtype = nullptr;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

class HeaderReader {
 public:
  HeaderReader(const std::string& origin, uint64_t buffer_bytes)
      : origin_(origin), buffer_bytes_(buffer_bytes) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(origin_ + ": " + what);
  }

  std::map<std::string, std::string> read_metadata(const Json& value) const {
    if (!value.is_object()) {
      fail(std::string(kMetadataKey) + ": expected an object of strings, found " +
           value.type_name());
    }
    std::map<std::string, std::string> metadata;
    for (const auto& [key, text] : value.items()) {
      if (!text.is_string()) {
        fail(std::string(kMetadataKey) + " " + quoted(key) + ": expected a string, found " +
             text.type_name() + " " + text.dump());
      }
      metadata[key] = text.get<std::string>();
    }
    return metadata;
  }

  TensorEntry read_tensor(const std::string& name, const Json& value) const {
    const std::string where = "tensor " + quoted(name) + ": ";
    if (!value.is_object()) {
      fail(where + "expected an object with dtype, shape and data_offsets, found " +
           value.type_name());
    }
    for (const auto& [key, field] : value.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets") {
        fail(where + "unknown key " + quoted(key) + "; known keys: dtype, shape, data_offsets");
      }
    }
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(key)) fail(where + "missing " + quoted(key));
    }

    TensorEntry entry;
    entry.name = name;
    const Json& dtype = value.at("dtype");
    if (!dtype.is_string()) fail(where + "dtype: expected a string, found " + dtype.type_name());
    entry.dtype = find_dtype(dtype.get<std::string>());
    if (entry.dtype == nullptr) {
      fail(where + "unsupported dtype " + dtype.dump() + " (supported: " + supported_dtype_names() +
           ")");
    }
    entry.shape = read_unsigned_array(where + "shape", value.at("shape"));
    const std::vector<uint64_t> offsets =
        read_unsigned_array(where + "data_offsets", value.at("data_offsets"));
    if (offsets.size() != 2) {
      fail(where + "data_offsets: expected [begin, end], found " + value.at("data_offsets").dump());
    }
    entry.begin = offsets[0];
    entry.end = offsets[1];

    const std::string offsets_text = "data_offsets " + format_list(offsets);
    const uint64_t byte_count = count_bytes(where, entry);
    if (entry.end < entry.begin) fail(where + offsets_text + " end before they begin");
    if (entry.end - entry.begin != byte_count) {
      fail(where + offsets_text + " do not match shape " + format_list(entry.shape) + " of " +
           entry.dtype->name + " (" + std::to_string(byte_count) + " bytes)");
    }
    if (entry.end > buffer_bytes_) {
      fail(where + offsets_text + ": offsets outside the data buffer of " +
           std::to_string(buffer_bytes_) + " bytes");
    }
    return entry;
  }

 private:
  std::vector<uint64_t> read_unsigned_array(const std::string& where, const Json& value) const {
    if (!value.is_array()) fail(where + ": expected an array, found " + value.type_name());
    std::vector<uint64_t> numbers;
    for (const Json& element : value) {
      if (!element.is_number_unsigned()) {
        fail(where + ": expected non-negative integers, found " + value.dump());
      }
      numbers.push_back(element.get<uint64_t>());
    }
    return numbers;
  }

  // Counts with overflow checks: a corrupt shape must not wrap around into a plausible size.
  // Zero-sized dimensions still count as 1 in the bound, because LibTorch computes strides from
  // the other dimensions and they must fit in int64.
  uint64_t count_bytes(const std::string& where, const TensorEntry& entry) const {
    uint64_t elements = 1;
    uint64_t stride_bound = 1;
    constexpr uint64_t kInt64Max = std::numeric_limits<int64_t>::max();
    for (uint64_t size : entry.shape) {
      if (__builtin_mul_overflow(elements, size, &elements) ||
          __builtin_mul_overflow(stride_bound, std::max<uint64_t>(size, 1), &stride_bound) ||
          stride_bound > kInt64Max) {
        fail(where + "shape " + format_list(entry.shape) + " is too large");
      }
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements, entry.dtype->element_bytes, &bytes) || bytes > kInt64Max) {
      fail(where + "shape " + format_list(entry.shape) + " is too large");
    }
    return bytes;
  }

  const std::string& origin_;
  uint64_t buffer_bytes_;
};

// The format has no padding between tensors: sorted by offset, each starts where the previous
// ended, and the last ends where the file does. Anything else is corruption or a foreign writer.
void check_tiling(const HeaderReader& reader, const std::vector<TensorEntry>& entries,
                  uint64_t buffer_bytes) {
  uint64_t expected_begin = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& entry : entries) {
    const std::string offsets_text =
        " (data_offsets " + format_list(std::vector<uint64_t>{entry.begin, entry.end}) + ")";
    if (entry.begin < expected_begin) {
      reader.fail("tensor " + quoted(entry.name) + offsets_text + " overlaps tensor " +
                  quoted(previous->name) + " (data_offsets " +
                  format_list(std::vector<uint64_t>{previous->begin, previous->end}) + ")");
    }
    if (entry.begin > expected_begin) {
      reader.fail("tensor " + quoted(entry.name) + offsets_text + " is not contiguous: bytes [" +
                  std::to_string(expected_begin) + ", " + std::to_string(entry.begin) +
                  ") before it belong to no tensor");
    }
    expected_begin = entry.end;
    previous = &entry;
  }
  if (expected_begin != buffer_bytes) {
    reader.fail("bytes [" + std::to_string(expected_begin) + ", " + std::to_string(buffer_bytes) +
                ") at the end of the data buffer belong to no tensor");
  }
}

at::Tensor copy_tensor(const HeaderReader& reader, const TensorEntry& entry,
                       std::string_view buffer) {
  const std::string_view bytes = buffer.substr(entry.begin, entry.end - entry.begin);
  // LibTorch assumes a bool is stored as 0 or 1; any other byte gives inconsistent comparisons.
  if (entry.dtype->type == at::kBool) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      const auto byte = static_cast<unsigned char>(bytes[i]);
      if (byte > 1) {
        reader.fail("tensor " + quoted(entry.name) + ": BOOL element " + std::to_string(i) +
                    " is stored as byte " + std::to_string(byte) + ", not 0 or 1");
      }
    }
  }
  const std::vector<int64_t> sizes(entry.shape.begin(), entry.shape.end());
  at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(entry.dtype->type));
  if (!bytes.empty()) std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

std::string read_whole_file(const std::string& path) {
  std::string content;
  for_each_file_chunk(path, [&content](std::string_view chunk) { content.append(chunk); });
  return content;
}

}  // namespace

std::string encode_safetensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;

  std::vector<at::Tensor> prepared;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const std::string where = "safetensors: tensor " + quoted(name) + ": ";
    if (name == kMetadataKey) throw std::invalid_argument(where + "the name is reserved");
    if (header.contains(name)) throw std::invalid_argument(where + "the name is given twice");
    if (!tensor.defined()) throw std::invalid_argument(where + "the tensor is undefined");
    if (tensor.layout() != at::kStrided) {
      throw std::invalid_argument(where + "only dense (strided) tensors can be stored");
    }
    const DtypeInfo* dtype = find_dtype(tensor.scalar_type());
    if (dtype == nullptr) {
      throw std::invalid_argument(where + "dtype " +
                                  std::string(c10::toString(tensor.scalar_type())) +
                                  " is not supported (supported: " + supported_dtype_names() + ")");
    }
    // resolve_neg: a negative-bit view would otherwise be written un-negated.
    at::Tensor cpu = tensor.to(at::kCPU).resolve_neg().contiguous();
    const uint64_t bytes = cpu.nbytes();
    header[name] = {{"dtype", dtype->name},
                    {"shape", cpu.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    prepared.push_back(std::move(cpu));
  }

  std::string header_text = encode_header(header);
  // Spaces, as the reference writer pads, so the buffer starts 8-byte aligned.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  if (header_text.size() > kMaxHeaderBytes) {
    throw std::invalid_argument(
        "safetensors: the header would take " + std::to_string(header_text.size()) +
        " bytes, more than readers accept (" + std::to_string(kMaxHeaderBytes) + ")");
  }

  std::string file;
  file.reserve(kLengthPrefixBytes + header_text.size() + offset);
  const uint64_t header_length = header_text.size();
  file.append(reinterpret_cast<const char*>(&header_length), kLengthPrefixBytes);
  file += header_text;
  for (const at::Tensor& tensor : prepared) {
    file.append(static_cast<const char*>(tensor.const_data_ptr()), tensor.nbytes());
  }
  return file;
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& origin) {
  const auto fail = [&origin](const std::string& what) {
    throw std::runtime_error(origin + ": " + what);
  };
  if (bytes.size() < kLengthPrefixBytes) {
    fail("truncated: " + std::to_string(bytes.size()) +
         " bytes, too short for the 8-byte header length");
  }
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), kLengthPrefixBytes);
  const uint64_t after_prefix = bytes.size() - kLengthPrefixBytes;
  if (header_length > kMaxHeaderBytes) {
    // Not the number itself: it is the file's first 8 bytes, and a scenario may name any file
    // the user can read (docs/trust.md).
    fail("the header length (the file's first 8 bytes) is more than the " +
         std::to_string(kMaxHeaderBytes) + " safetensors allows: corrupt, or not safetensors");
  }
  if (header_length > after_prefix) {
    fail("truncated: the header says " + std::to_string(header_length) +
         " bytes but the file has " + std::to_string(after_prefix) + " after the 8-byte length");
  }
  const std::string header_text(bytes.substr(kLengthPrefixBytes, header_length));
  const std::string_view buffer = bytes.substr(kLengthPrefixBytes + header_length);
  // As the reference reader: this catches a file that is not safetensors at all early and clearly.
  if (header_text.empty() || header_text.front() != '{') {
    fail("header does not start with '{': not a safetensors file");
  }

  RepeatedKeyFinder repeated_keys;
  Json header;
  try {
    header = Json::parse(header_text, std::ref(repeated_keys), /*allow_exceptions=*/true,
                         /*ignore_comments=*/false);
  } catch (const Json::exception& error) {
    // "[json.exception.parse_error.101] parse error at …" → "parse error at …"
    const std::string what = error.what();
    const size_t prefix_end = what.find("] ");
    fail("header is not valid JSON: " +
         (prefix_end == std::string::npos ? what : what.substr(prefix_end + 2)));
  }
  if (!repeated_keys.repeated_key().empty()) {
    fail("header: key " + quoted(repeated_keys.repeated_key()) + " appears twice in one object");
  }

  const HeaderReader reader(origin, buffer.size());
  SafetensorsFile file;
  std::vector<TensorEntry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      file.metadata = reader.read_metadata(value);
    } else {
      entries.push_back(reader.read_tensor(key, value));
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  check_tiling(reader, entries, buffer.size());

  for (const TensorEntry& entry : entries) {
    file.names.push_back(entry.name);
    file.tensors.emplace(entry.name, copy_tensor(reader, entry, buffer));
  }
  return file;
}

SafetensorsFile read_safetensors(const std::string& path) {
  return decode_safetensors(read_whole_file(path), path);
}

}  // namespace trainrepro
