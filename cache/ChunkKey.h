#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tierfs::cache {

// Names one immutable chunk object of a volume: the file's inode, the content version at which
// the chunk was written, and its piece number in that version. A chunk is never rewritten under
// the same key, so a cached copy is either right or absent.
struct ChunkKey {
  std::uint64_t ino = 0;
  std::uint64_t version = 0;
  std::uint32_t piece = 0;

  // "c.<ino>.<version>.<piece>", numbers in hex.
  std::string objectName() const;
  // The key of a chunk object name; nullopt for any other name.
  static std::optional<ChunkKey> fromObjectName(std::string_view name);

  friend auto operator<=>(const ChunkKey&, const ChunkKey&) = default;
};

struct ChunkKeyHash {
  std::size_t operator()(const ChunkKey& k) const {
    // Mixes the fields; keys of one file differ mostly in version and piece.
    std::uint64_t h = k.ino * 0x9E3779B97F4A7C15ull;
    h ^= k.version + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= k.piece + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h);
  }
};

}  // namespace tierfs::cache
