#include "cache/ShardsCurve.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <thread>

namespace tierfs::cache {

std::uint64_t SpreadCounter::total() const {
  std::uint64_t sum = 0;
  for (const Slot& s : slots_) sum += s.n.load(std::memory_order_relaxed);
  return sum;
}

std::size_t SpreadCounter::slotOfThisThread() {
  thread_local const std::size_t slot =
      std::hash<std::thread::id>{}(std::this_thread::get_id()) % kSlots;
  return slot;
}

ShardsCurve::ShardsCurve(ShardsOptions options)
    : adjust_(options.adjust),
      threshold_(thresholdFor(options.sampleRate)),
      maxSamples_(std::max<std::uint32_t>(options.maxSamples, 1)) {}

std::uint32_t ShardsCurve::thresholdFor(double rate) {
  const long long threshold = std::llround(rate * kModulus);
  return static_cast<std::uint32_t>(std::clamp<long long>(threshold, 1, kModulus));
}

std::uint32_t ShardsCurve::spatialValue(std::uint64_t h) {
  // The splitmix64 finaliser: every input bit moves the top 24 bits taken.
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 31;
  return static_cast<std::uint32_t>(h >> 40);
}

void ShardsCurve::recordSampled(std::uint64_t keyHash, std::uint32_t value, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  const std::uint32_t threshold = threshold_.load(std::memory_order_relaxed);
  if (value >= threshold) return;  // lowered since the caller looked
  const double rate = static_cast<double>(threshold) / kModulus;
  std::optional<std::uint64_t> above = stack_.access(keyHash, bytes);
  ++sampledAccesses_;
  total_ += 1;
  if (!above) {
    coldMisses_ += 1;
    byValue_.emplace_back(value, keyHash);
    std::push_heap(byValue_.begin(), byValue_.end());
    if (byValue_.size() > maxSamples_) lowerThreshold();
    return;
  }
  // The other keys' bytes stand for 1/R times as many in the whole stream; the key's own do not.
  const double distance = static_cast<double>(*above) / rate + static_cast<double>(bytes);
  histogram_[bucketOf(static_cast<std::uint64_t>(distance))] += 1;
}

// Drops the keys with the largest values until maxSamples are left; the new threshold is the
// largest value dropped, so none of them is sampled again.
void ShardsCurve::lowerThreshold() {
  const std::uint32_t before = threshold_.load(std::memory_order_relaxed);
  const std::uint32_t after = byValue_.front().first;
  while (!byValue_.empty() && byValue_.front().first >= after) {
    std::pop_heap(byValue_.begin(), byValue_.end());
    stack_.erase(byValue_.back().second);
    byValue_.pop_back();
  }
  threshold_.store(after, std::memory_order_relaxed);
  const double scale = static_cast<double>(after) / before;
  for (double& count : histogram_) count *= scale;
  coldMisses_ *= scale;
  total_ *= scale;
}

std::size_t ShardsCurve::bucketOf(std::uint64_t d) {
  if (d < 32) return d;
  const int e = std::bit_width(d) - 1;  // >= 5
  const std::uint64_t mantissa = (d >> (e - 5)) & 31;
  return std::min<std::size_t>(32 + (e - 5) * 32 + mantissa, kBuckets - 1);
}

std::uint64_t ShardsCurve::bucketLow(std::size_t b) {
  if (b < 32) return b;
  const std::size_t e = (b - 32) / 32 + 5, mantissa = (b - 32) % 32;
  return (32 + mantissa) << (e - 5);
}

std::uint64_t ShardsCurve::bucketHigh(std::size_t b) {
  return b + 1 < kBuckets ? bucketLow(b + 1) : UINT64_MAX;
}

// Accesses with distance <= cacheBytes; within a bucket, distances are taken as spread evenly.
double ShardsCurve::hitsUpTo(std::uint64_t cacheBytes) const {
  double hits = 0;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    const std::uint64_t low = bucketLow(b), high = bucketHigh(b);
    if (low > cacheBytes) break;
    if (high - 1 <= cacheBytes) {
      hits += histogram_[b];
    } else {
      hits += histogram_[b] * static_cast<double>(cacheBytes - low + 1) /
              static_cast<double>(high - low);
    }
  }
  return hits;
}

// With adjust_: every access times R, what the sampled ones would be without sampling noise;
// the shortfall (or excess) counts as hits at the smallest distance.
double ShardsCurve::expectedLocked() const {
  if (!adjust_) return total_;
  const double rate = static_cast<double>(threshold_.load(std::memory_order_relaxed)) / kModulus;
  const double expected = static_cast<double>(accesses_.total()) * rate;
  return expected > 0 ? expected : total_;
}

double ShardsCurve::missRatio(std::uint64_t cacheBytes) const {
  std::lock_guard lock(mu_);
  if (total_ <= 0) return 1.0;
  const double expected = expectedLocked();
  const double hits = hitsUpTo(cacheBytes) + (expected - total_);
  return std::clamp(1.0 - hits / expected, 0.0, 1.0);
}

std::optional<std::uint64_t> ShardsCurve::smallestSizeFor(double hitRatio) const {
  std::lock_guard lock(mu_);
  if (total_ <= 0) return std::nullopt;
  const double expected = expectedLocked();
  const double wanted = hitRatio * expected;
  double hits = expected - total_;
  for (std::size_t b = 0; b < kBuckets; ++b) {
    if (hits + histogram_[b] < wanted) {
      hits += histogram_[b];
      continue;
    }
    // Inside this bucket: as far in as the hits still missing need.
    const double fraction = histogram_[b] > 0 ? std::max(0.0, wanted - hits) / histogram_[b] : 0.0;
    const double span = static_cast<double>(bucketHigh(b) - bucketLow(b));
    const auto into = static_cast<std::uint64_t>(std::ceil(fraction * span));
    return bucketLow(b) + (into > 0 ? into - 1 : 0);
  }
  return std::nullopt;
}

std::uint64_t ShardsCurve::workingSetBytes() const {
  std::lock_guard lock(mu_);
  const double rate = static_cast<double>(threshold_.load(std::memory_order_relaxed)) / kModulus;
  return static_cast<std::uint64_t>(static_cast<double>(stack_.totalBytes()) / rate);
}

double ShardsCurve::sampleRate() const {
  return static_cast<double>(threshold_.load(std::memory_order_relaxed)) / kModulus;
}

std::size_t ShardsCurve::samples() const {
  std::lock_guard lock(mu_);
  return stack_.size();
}

std::uint64_t ShardsCurve::sampledAccesses() const {
  std::lock_guard lock(mu_);
  return sampledAccesses_;
}

std::size_t ShardsCurve::memoryBytes() const {
  std::lock_guard lock(mu_);
  return sizeof(*this) + stack_.memoryBytes() +
         byValue_.capacity() * sizeof(decltype(byValue_)::value_type);
}

}  // namespace tierfs::cache
