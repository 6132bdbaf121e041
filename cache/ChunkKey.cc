#include "cache/ChunkKey.h"

#include <fmt/format.h>

#include <charconv>

namespace tierfs::cache {
namespace {

// Parses lower-case hex up to the next '.' (or the end) and moves past it.
template <typename T>
bool takeHex(std::string_view& in, T& out, bool last) {
  std::size_t dot = in.find('.');
  if (last != (dot == std::string_view::npos)) return false;
  std::string_view field = in.substr(0, dot);
  if (field.empty() || field.size() > 2 * sizeof(T)) return false;
  auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), out, 16);
  if (ec != std::errc() || ptr != field.data() + field.size()) return false;
  in.remove_prefix(last ? in.size() : dot + 1);
  return true;
}

}  // namespace

std::string ChunkKey::objectName() const {
  return fmt::format("c.{:x}.{:x}.{:x}", ino, version, piece);
}

std::optional<ChunkKey> ChunkKey::fromObjectName(std::string_view name) {
  if (!name.starts_with("c.")) return std::nullopt;
  std::string_view rest = name.substr(2);
  ChunkKey k;
  if (!takeHex(rest, k.ino, false) || !takeHex(rest, k.version, false) ||
      !takeHex(rest, k.piece, true)) {
    return std::nullopt;
  }
  // Only the one spelling objectName() produces (no leading zeros, no capitals) is a chunk.
  if (k.objectName() != name) return std::nullopt;
  return k;
}

}  // namespace tierfs::cache
