#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "cache/ByteStack.h"

namespace tierfs::cache {

// The exact miss-ratio curve of an LRU cache sized in bytes: every access's reuse distance (the
// key's own bytes included, as in ShardsCurve), kept exactly. Memory grows with the distinct
// keys and distances: for checking SHARDS offline (`tierfs advise --trace --exact`), not for the
// daemon. Not thread-safe.
class ExactLru {
 public:
  void record(std::uint64_t keyHash, std::uint64_t bytes);
  double missRatio(std::uint64_t cacheBytes) const;
  std::optional<std::uint64_t> smallestSizeFor(double hitRatio) const;
  std::uint64_t workingSetBytes() const { return stack_.totalBytes(); }
  std::uint64_t accesses() const { return accesses_; }

 private:
  ByteStack stack_;
  std::map<std::uint64_t, std::uint64_t> distances_;  // reuse distance -> accesses
  std::uint64_t accesses_ = 0;
};

}  // namespace tierfs::cache
