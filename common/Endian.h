#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tierfs {

// Big-endian integers sort bytewise in numeric order: the encoding for keys (RocksDB, omap).
inline void appendBigEndian32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}
inline void appendBigEndian64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}
// Reads 8 bytes; the caller has checked that `in` holds at least 8.
inline std::uint64_t readBigEndian64(std::string_view in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<std::uint8_t>(in[i]);
  return v;
}

}  // namespace tierfs
