#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "cache/ByteStack.h"

namespace tierfs::cache {

struct ShardsOptions {
  double sampleRate = 0.01;         // the initial rate R (0 < R <= 1); lowered to keep maxSamples
  std::uint32_t maxSamples = 8192;  // keys tracked at most: bounds memory (~100 bytes each)
  // SHARDS_adj: the curve is given every access (not only those a caller sampled before), so
  // the accesses it expected to sample (all of them times R) can correct the ones it did.
  bool adjust = true;
};

// A count bumped by many threads at once: one cache line per slot, a slot per thread (by its
// id), so that readers on different cores do not fight over one line.
class SpreadCounter {
 public:
  void add() { slots_[slotOfThisThread()].n.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t total() const;

 private:
  static constexpr std::size_t kSlots = 16;
  static std::size_t slotOfThisThread();
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> n{0};
  };
  std::array<Slot, kSlots> slots_;
};

// A miss-ratio curve of an LRU cache sized in bytes, estimated from a sample of the accesses:
// fixed-size SHARDS (Waldspurger et al., FAST'15). A key is sampled when the hash of its key,
// modulo P = 2^24, is below a threshold T (rate R = T/P), so every access to a sampled key is
// seen and its reuse distance (bytes of the other sampled keys accessed since) is exact among
// the samples; scaled by 1/R it estimates the distance in the whole stream. When more than
// maxSamples keys are sampled, T drops to the largest sampled value and the keys at or above it
// leave; the histogram, gathered at the old rate, is scaled by R_new/R_old.
//
// The reuse distance counted for an access includes the key's own bytes: with it, an access
// hits a cache of C bytes exactly when its distance is <= C.
//
// SHARDS_adj (options.adjust): a hot key that happens to be sampled, or not, moves the sampled
// access count far from R times all accesses; the difference is added to the smallest distance
// (as hits), as the paper does, and the curve is normalised by the expected count.
//
// Thread-safe. record() rejects most accesses with one counter bump, one hash and one compare,
// before any lock.
class ShardsCurve {
 public:
  explicit ShardsCurve(ShardsOptions options);

  // One access to the key with hash `keyHash`, of `bytes` bytes.
  void record(std::uint64_t keyHash, std::uint64_t bytes) {
    if (adjust_) accesses_.add();
    const std::uint32_t value = spatialValue(keyHash);
    if (value < threshold_.load(std::memory_order_relaxed)) recordSampled(keyHash, value, bytes);
  }

  // The key's place in the hash space [0, P): sampled while below the threshold. The caller's
  // hash is mixed again, since chunk-key hashes are not uniform in their low bits.
  static std::uint32_t spatialValue(std::uint64_t keyHash);
  static constexpr std::uint32_t kModulus = 1u << 24;
  // The threshold of a sampling rate: at least 1 (a rate of 0 would sample nothing, ever).
  static std::uint32_t thresholdFor(double rate);

  double missRatio(std::uint64_t cacheBytes) const;
  // The smallest cache whose hit ratio reaches `hitRatio`; nullopt when none does (the first
  // access to each key misses whatever the size).
  std::optional<std::uint64_t> smallestSizeFor(double hitRatio) const;
  // Distinct bytes accessed so far (estimated): the size from which only cold misses remain.
  std::uint64_t workingSetBytes() const;
  double sampleRate() const;
  std::size_t samples() const;
  std::uint64_t sampledAccesses() const;  // accesses counted in the histogram
  std::size_t memoryBytes() const;

 private:
  // Distance buckets: exact below 32 bytes, then 32 per power of two (~3% wide).
  static constexpr std::size_t kBuckets = 32 + 59 * 32;
  static std::size_t bucketOf(std::uint64_t distance);
  static std::uint64_t bucketLow(std::size_t bucket);
  static std::uint64_t bucketHigh(std::size_t bucket);  // exclusive

  void recordSampled(std::uint64_t keyHash, std::uint32_t value, std::uint64_t bytes);
  void lowerThreshold();
  double hitsUpTo(std::uint64_t cacheBytes) const;  // mu_ held
  double expectedLocked() const;  // accesses the curve is normalised by, at the current rate

  const bool adjust_;
  SpreadCounter accesses_;  // every access recorded (with adjust_)

  std::atomic<std::uint32_t> threshold_;
  const std::uint32_t maxSamples_;
  mutable std::mutex mu_;  // guards everything below
  ByteStack stack_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> byValue_;  // max-heap of (value, key)
  std::array<double, kBuckets> histogram_{};  // accesses by reuse distance, at the current rate
  double coldMisses_ = 0;                     // first accesses, at the current rate
  double total_ = 0;                          // every access counted, at the current rate
  std::uint64_t sampledAccesses_ = 0;
};

}  // namespace tierfs::cache
