// SHA-256 written out from FIPS 180-4 (section 6.2), so that the harness needs no crypto library.
// Only integrity matters here, not secrecy: no constant-time concerns.
#include "harness/files/sha256.h"

#include "harness/files/file_chunks.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace trainrepro {
namespace {

// First 32 bits of the fractional parts of the cube roots of the first 64 primes (4.2.2).
constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// First 32 bits of the fractional parts of the square roots of the first 8 primes (5.3.3).
constexpr std::array<uint32_t, 8> kInitialHash = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr size_t kBlockBytes = 64;

uint32_t rotate_right(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// Incremental hashing: bytes go in by update() in any split, the digest comes out of finish().
class Sha256 {
 public:
  void update(std::string_view bytes) {
    total_bytes_ += bytes.size();
    size_t used = 0;
    if (pending_size_ > 0) {
      const size_t take = std::min(kBlockBytes - pending_size_, bytes.size());
      std::memcpy(pending_.data() + pending_size_, bytes.data(), take);
      pending_size_ += take;
      used = take;
      if (pending_size_ < kBlockBytes) return;
      compress(pending_.data());
      pending_size_ = 0;
    }
    for (; bytes.size() - used >= kBlockBytes; used += kBlockBytes) {
      compress(reinterpret_cast<const unsigned char*>(bytes.data() + used));
    }
    std::memcpy(pending_.data(), bytes.data() + used, bytes.size() - used);
    pending_size_ = bytes.size() - used;
  }

  std::string finish() {
    // Padding (5.1.1): a 1 bit, zeros up to 56 bytes mod 64, then the length in bits, big-endian.
    const uint64_t length_in_bits = total_bytes_ * 8;
    const size_t zeros = (pending_size_ < 56 ? 56 : 120) - pending_size_ - 1;
    std::string padding(1 + zeros + 8, '\0');
    padding[0] = static_cast<char>(0x80);
    for (int i = 0; i < 8; ++i) {
      padding[1 + zeros + i] = static_cast<char>(length_in_bits >> (56 - 8 * i));
    }
    update(padding);

    static constexpr char kHexDigits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(64);
    for (uint32_t word : hash_) {
      for (int shift = 28; shift >= 0; shift -= 4) hex += kHexDigits[(word >> shift) & 0xf];
    }
    return hex;
  }

 private:
  // One 512-bit block through the compression function (6.2.2).
  void compress(const unsigned char* block) {
    std::array<uint32_t, 64> schedule;
    for (int t = 0; t < 16; ++t) {
      schedule[t] = uint32_t{block[4 * t]} << 24 | uint32_t{block[4 * t + 1]} << 16 |
                    uint32_t{block[4 * t + 2]} << 8 | uint32_t{block[4 * t + 3]};
    }
    for (int t = 16; t < 64; ++t) {
      const uint32_t w15 = schedule[t - 15];
      const uint32_t w2 = schedule[t - 2];
      const uint32_t sigma0 = rotate_right(w15, 7) ^ rotate_right(w15, 18) ^ (w15 >> 3);
      const uint32_t sigma1 = rotate_right(w2, 17) ^ rotate_right(w2, 19) ^ (w2 >> 10);
      schedule[t] = sigma1 + schedule[t - 7] + sigma0 + schedule[t - 16];
    }

    uint32_t a = hash_[0], b = hash_[1], c = hash_[2], d = hash_[3];
    uint32_t e = hash_[4], f = hash_[5], g = hash_[6], h = hash_[7];
    for (int t = 0; t < 64; ++t) {
      const uint32_t big_sigma1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
      const uint32_t choose = (e & f) ^ (~e & g);
      const uint32_t t1 = h + big_sigma1 + choose + kRoundConstants[t] + schedule[t];
      const uint32_t big_sigma0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
      const uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
      const uint32_t t2 = big_sigma0 + majority;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    hash_[0] += a;
    hash_[1] += b;
    hash_[2] += c;
    hash_[3] += d;
    hash_[4] += e;
    hash_[5] += f;
    hash_[6] += g;
    hash_[7] += h;
  }

  std::array<uint32_t, 8> hash_ = kInitialHash;
  std::array<unsigned char, kBlockBytes> pending_{};
  size_t pending_size_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish();
}

std::string sha256_of_file(const std::string& path) {
  Sha256 hasher;
  for_each_file_chunk(path, [&hasher](std::string_view chunk) { hasher.update(chunk); });
  return hasher.finish();
}

}  // namespace trainrepro
