#pragma once

// DirStore's on-disk encoding, shared by its read and write paths. Key layout in meta/:
//   'o' + oid                      -> ObjectRecord
//   'x' + len32(oid) + oid + name  -> xattr value
//   'm' + len32(oid) + oid + key   -> omap value
// Length-prefixing keeps one object's keys apart from those of an object whose name extends it.

#include <fmt/format.h>
#include <rocksdb/status.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/Endian.h"
#include "common/Result.h"

namespace tierfs::backends::dirkeys {

inline std::string recordKey(std::string_view oid) { return "o" + std::string(oid); }
inline std::string ownedPrefix(char tag, std::string_view oid) {
  std::string k(1, tag);
  appendBigEndian32(k, static_cast<std::uint32_t>(oid.size()));
  k.append(oid);
  return k;
}
inline std::string xattrKey(std::string_view oid, std::string_view name) {
  return ownedPrefix('x', oid).append(name);
}
inline std::string omapKey(std::string_view oid, std::string_view key) {
  return ownedPrefix('m', oid).append(key);
}
// The smallest key greater than every key that starts with `prefix`.
inline std::string prefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

inline std::int64_t nowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline Status fromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::ok();
  if (s.IsNoSpace()) return Status::noSpace(fmt::format("{}: {}", what, s.ToString()));
  if (s.IsCorruption()) return Status::corruption(fmt::format("{}: {}", what, s.ToString()));
  return Status::ioError(fmt::format("{}: {}", what, s.ToString()));
}

// Per object: its version, size, mtime and which data file holds its bytes.
struct ObjectRecord {
  static constexpr std::uint8_t kFormat = 1;
  static constexpr std::size_t kEncodedSize = 33;

  std::uint64_t version = 0;
  std::uint64_t size = 0;
  std::int64_t mtimeSec = 0;
  std::uint64_t dataId = 0;  // 0: no data file (an empty object)

  std::string encode() const {
    std::string out(1, static_cast<char>(kFormat));
    appendBigEndian64(out, version);
    appendBigEndian64(out, size);
    appendBigEndian64(out, static_cast<std::uint64_t>(mtimeSec));
    appendBigEndian64(out, dataId);
    return out;
  }

  static Result<ObjectRecord> decode(std::string_view in) {
    if (in.size() != kEncodedSize || static_cast<std::uint8_t>(in[0]) != kFormat) {
      return failure(Status::corruption(
          fmt::format("object record of {} bytes (expected {} bytes of format {})", in.size(),
                      kEncodedSize, kFormat)));
    }
    ObjectRecord r;
    r.version = readBigEndian64(in.substr(1));
    r.size = readBigEndian64(in.substr(9));
    r.mtimeSec = static_cast<std::int64_t>(readBigEndian64(in.substr(17)));
    r.dataId = readBigEndian64(in.substr(25));
    return r;
  }
};

}  // namespace tierfs::backends::dirkeys
