#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace tierfs::cache {

// An LRU stack of keys weighted by their sizes in bytes: each access answers how many bytes of
// other keys were accessed since the key's previous access (its reuse distance in bytes, the
// quantity an LRU cache sized in bytes cares about). O(log n) an access: a Fenwick tree over
// access stamps holds each live key's bytes at its latest stamp; stamps are renumbered when
// they run out, so memory stays proportional to the keys held.
//
// Not thread-safe: callers lock.
class ByteStack {
 public:
  // Bytes of the distinct other keys accessed since `key` was last accessed; nullopt at its first
  // access. Then puts `key` on top with `bytes`.
  std::optional<std::uint64_t> access(std::uint64_t key, std::uint64_t bytes);
  void erase(std::uint64_t key);

  std::size_t size() const { return keys_.size(); }
  std::uint64_t totalBytes() const { return totalBytes_; }
  // The heap memory this stack holds now.
  std::size_t memoryBytes() const;

 private:
  struct Entry {
    std::uint64_t stamp = 0;
    std::uint64_t bytes = 0;
  };

  void add(std::uint64_t stamp, std::int64_t delta);
  std::uint64_t prefix(std::uint64_t stamp) const;  // bytes at stamps <= `stamp`
  void renumber();

  absl::flat_hash_map<std::uint64_t, Entry> keys_;
  std::vector<std::uint64_t> tree_;  // Fenwick tree, 1-based, over stamps
  std::uint64_t nextStamp_ = 0;
  std::uint64_t totalBytes_ = 0;
};

}  // namespace tierfs::cache
