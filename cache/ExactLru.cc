#include "cache/ExactLru.h"

#include <cmath>

namespace tierfs::cache {

void ExactLru::record(std::uint64_t keyHash, std::uint64_t bytes) {
  ++accesses_;
  if (std::optional<std::uint64_t> above = stack_.access(keyHash, bytes)) {
    ++distances_[*above + bytes];
  }
}

double ExactLru::missRatio(std::uint64_t cacheBytes) const {
  if (accesses_ == 0) return 1.0;
  std::uint64_t hits = 0;
  for (auto it = distances_.begin(); it != distances_.end() && it->first <= cacheBytes; ++it) {
    hits += it->second;
  }
  return 1.0 - static_cast<double>(hits) / static_cast<double>(accesses_);
}

std::optional<std::uint64_t> ExactLru::smallestSizeFor(double hitRatio) const {
  const double wanted = std::ceil(hitRatio * static_cast<double>(accesses_));
  std::uint64_t hits = 0;
  for (const auto& [distance, count] : distances_) {
    hits += count;
    if (static_cast<double>(hits) >= wanted) return distance;
  }
  return std::nullopt;
}

}  // namespace tierfs::cache
