// The sizing advisor's SHARDS curves (cache/ShardsCurve): on synthetic traces whose exact LRU
// miss-ratio curves the test computes by its own stack-distance simulation over bytes, every
// size is within 0.02; memory stays bounded; concurrent recording is safe. Also the exact LRU
// of `tierfs advise --exact` and the cost of recording (printed, not asserted).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <list>
#include <memory>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/ExactLru.h"
#include "cache/ShardsCurve.h"

namespace tierfs::cache {
namespace {

struct Access {
  std::uint64_t key = 0;
  std::uint64_t bytes = 0;
};
using Trace = std::vector<Access>;

constexpr std::uint64_t kMiB = 1 << 20;

// A key hash for key number i (what the daemon's chunk-key hash would give: arbitrary bits).
std::uint64_t keyHash(std::uint64_t i) { return (i + 1) * 0x9E3779B97F4A7C15ull ^ 0x5bd1e995; }

// The exact curve, by a simulation independent of the code under test: a Fenwick tree over the
// positions in the trace, each key's bytes at its latest position.
class ExactCurve {
 public:
  explicit ExactCurve(const Trace& trace) : total_(trace.size()) {
    std::vector<std::int64_t> tree(trace.size() + 1, 0);
    auto add = [&](std::size_t pos, std::int64_t delta) {
      for (std::size_t i = pos + 1; i <= trace.size(); i += i & (~i + 1)) tree[i] += delta;
    };
    auto prefix = [&](std::size_t pos) {
      std::int64_t sum = 0;
      for (std::size_t i = pos + 1; i > 0; i -= i & (~i + 1)) sum += tree[i];
      return sum;
    };
    std::unordered_map<std::uint64_t, std::size_t> last;
    std::int64_t live = 0;
    for (std::size_t t = 0; t < trace.size(); ++t) {
      const Access& a = trace[t];
      if (auto it = last.find(a.key); it != last.end()) {
        distances_.push_back(static_cast<std::uint64_t>(live - prefix(it->second)) + a.bytes);
        add(it->second, -static_cast<std::int64_t>(a.bytes));
        live -= static_cast<std::int64_t>(a.bytes);
      }
      last[a.key] = t;
      add(t, static_cast<std::int64_t>(a.bytes));
      live += static_cast<std::int64_t>(a.bytes);
      workingSet_ = std::max(workingSet_, static_cast<std::uint64_t>(live));
    }
    std::sort(distances_.begin(), distances_.end());
  }

  double missRatio(std::uint64_t cacheBytes) const {
    const auto hits =
        std::upper_bound(distances_.begin(), distances_.end(), cacheBytes) - distances_.begin();
    return 1.0 - static_cast<double>(hits) / static_cast<double>(total_);
  }
  std::uint64_t workingSet() const { return workingSet_; }

 private:
  std::size_t total_;
  std::vector<std::uint64_t> distances_;
  std::uint64_t workingSet_ = 0;
};

// The hit count of a real LRU cache of `capacity` bytes, run as MemoryChunkCache runs: a hit
// moves the key to the front; a miss inserts it and evicts from the back while over capacity.
std::size_t lruHits(const Trace& trace, std::uint64_t capacity) {
  std::list<std::uint64_t> order;
  std::unordered_map<std::uint64_t, std::pair<std::list<std::uint64_t>::iterator, std::uint64_t>>
      held;
  std::uint64_t bytes = 0;
  std::size_t hits = 0;
  for (const Access& a : trace) {
    if (auto it = held.find(a.key); it != held.end()) {
      ++hits;
      order.splice(order.begin(), order, it->second.first);
      continue;
    }
    if (a.bytes > capacity) continue;
    order.push_front(a.key);
    held[a.key] = {order.begin(), a.bytes};
    bytes += a.bytes;
    while (bytes > capacity) {
      bytes -= held[order.back()].second;
      held.erase(order.back());
      order.pop_back();
    }
  }
  return hits;
}

Trace uniformTrace(std::size_t keys, std::size_t accesses, std::uint64_t bytes, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, keys - 1);
  Trace t;
  for (std::size_t i = 0; i < accesses; ++i) t.push_back({keyHash(pick(rng)), bytes});
  return t;
}

// Zipf-skewed: key k drawn with probability ~ 1 / (k+1)^alpha; sizes from `sizeOf`.
template <typename SizeFn>
Trace zipfTrace(std::size_t keys, std::size_t accesses, double alpha, unsigned seed,
                SizeFn sizeOf) {
  std::vector<double> weights(keys);
  for (std::size_t k = 0; k < keys; ++k) weights[k] = 1.0 / std::pow(k + 1.0, alpha);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  std::mt19937_64 rng(seed);
  Trace t;
  for (std::size_t i = 0; i < accesses; ++i) {
    const std::size_t k = pick(rng);
    t.push_back({keyHash(k), sizeOf(k)});
  }
  return t;
}

std::unique_ptr<ShardsCurve> replay(const Trace& trace, ShardsOptions options) {
  auto curve = std::make_unique<ShardsCurve>(options);
  for (const Access& a : trace) curve->record(a.key, a.bytes);
  return curve;
}

// Sizes from 1/50 of the working set to 1.5 times it, 60 geometric steps, minus any that
// `skip` says are on a cliff.
template <typename SkipFn>
void expectClose(const ShardsCurve& shards, const ExactCurve& exact, SkipFn skip,
                 double tolerance = 0.02) {
  const double top = 1.5 * static_cast<double>(exact.workingSet());
  const double bottom = top / 75;
  double worst = 0;
  for (int i = 0; i <= 60; ++i) {
    const auto size = static_cast<std::uint64_t>(bottom * std::pow(top / bottom, i / 60.0));
    if (skip(size)) continue;
    const double error = std::abs(shards.missRatio(size) - exact.missRatio(size));
    worst = std::max(worst, error);
    EXPECT_LE(error, tolerance) << "at " << size << " bytes: SHARDS " << shards.missRatio(size)
                                << ", exact " << exact.missRatio(size);
  }
  std::printf("  worst error %.4f; %zu samples at rate %.4f\n", worst, shards.samples(),
              shards.sampleRate());
}
auto noSkip = [](std::uint64_t) { return false; };

TEST(ShardsCurve, ExactSimulationIsWhatAnLruCacheDoes) {
  // Mixed sizes, so that byte capacity (not a count of keys) decides.
  const Trace trace = zipfTrace(400, 20'000, 0.8, 7,
                                [](std::size_t k) { return (k % 3 == 0 ? 3 : 1) * 64 * 1024 + k; });
  const ExactCurve exact(trace);
  for (std::uint64_t capacity :
       {std::uint64_t{256 * 1024}, 2 * kMiB, 8 * kMiB, 20 * kMiB, 64 * kMiB}) {
    const double measured =
        1.0 - static_cast<double>(lruHits(trace, capacity)) / static_cast<double>(trace.size());
    EXPECT_NEAR(exact.missRatio(capacity), measured, 1e-9) << capacity;
  }
}

TEST(ShardsCurve, UniformRandomKeys) {
  const Trace trace = uniformTrace(20'000, 400'000, kMiB, 1);
  expectClose(*replay(trace, {0.1, 8192}), ExactCurve(trace), noSkip);
}

TEST(ShardsCurve, ZipfSkewedKeys) {
  const Trace trace = zipfTrace(50'000, 500'000, 0.9, 2, [](std::size_t) { return kMiB; });
  expectClose(*replay(trace, {0.2, 8192}), ExactCurve(trace), noSkip);
}

TEST(ShardsCurve, MixedChunkSizes) {
  // Small files' single small chunks and large files' 4 MiB chunks, Zipf-skewed. Sizes this uneven
  // make the byte distances noisier than equal sizes do: 16,384 samples (at 8,192 the worst
  // error here is 0.020).
  const Trace trace = zipfTrace(40'000, 400'000, 0.8, 3, [](std::size_t k) {
    return k % 4 == 0 ? 4 * kMiB : 16 * 1024 + (k % 97) * 1024;
  });
  expectClose(*replay(trace, {0.5, 16384}), ExactCurve(trace), noSkip);
}

TEST(ShardsCurve, LoopingScanLargerThanTheSmallerSizes) {
  // 8,000 keys read in the same order 6 times: LRU misses everything below the loop's bytes
  // and only the first pass above. The cliff's place is estimated from a sample: sizes within
  // 5% of it are left out.
  constexpr std::size_t kKeys = 8000;
  Trace trace;
  for (int pass = 0; pass < 6; ++pass) {
    for (std::size_t k = 0; k < kKeys; ++k) trace.push_back({keyHash(k), kMiB});
  }
  const ExactCurve exact(trace);
  const auto curve = replay(trace, {0.25, 8192});
  const ShardsCurve& shards = *curve;
  const double cliff = kKeys * static_cast<double>(kMiB);
  expectClose(shards, exact, [&](std::uint64_t s) { return std::abs(s / cliff - 1) < 0.05; });
  // Below the loop everything misses; SHARDS_adj's correction may move it by its noise only.
  EXPECT_NEAR(shards.missRatio(kKeys / 2 * kMiB), 1.0, 0.02);
}

TEST(ShardsCurve, FixedSizeLowersTheThresholdAndStaysAccurate) {
  // 300,000 distinct keys from a rate of 1 with 4,096 samples at most: the threshold drops
  // many times (to ~1/70), and the histogram is rescaled each time.
  const Trace trace = zipfTrace(300'000, 1'500'000, 0.7, 4,
                                [](std::size_t k) { return k % 5 == 0 ? 2 * kMiB : 256 * 1024; });
  const auto curve = replay(trace, {1.0, 4096});
  const ShardsCurve& shards = *curve;
  EXPECT_LE(shards.samples(), 4096u);
  EXPECT_LT(shards.sampleRate(), 1.0 / 32);
  expectClose(shards, ExactCurve(trace), noSkip);
}

TEST(ShardsCurve, MemoryStaysBounded) {
  ShardsCurve curve({1.0, 1000});
  std::size_t most = 0;
  for (std::uint64_t i = 0; i < 200'000; ++i) {
    curve.record(keyHash(i % 50'000), 4096);
    most = std::max(most, curve.samples());
  }
  EXPECT_LE(most, 1000u);
  EXPECT_GT(curve.samples(), 500u);  // lowering drops only the keys at the top
  EXPECT_LT(curve.memoryBytes(), 200u * 1024);
}

TEST(ShardsCurve, SmallestSizeForATargetIsWhereTheCurveReachesIt) {
  const Trace trace = uniformTrace(1000, 100'000, kMiB, 5);
  const auto replayed = replay(trace, {1.0, 8192});
  const ShardsCurve& curve = *replayed;
  // Every key is sampled: 99% of accesses hit once the cache holds all 1,000 keys.
  auto size = curve.smallestSizeFor(0.95);
  ASSERT_TRUE(size.has_value());
  EXPECT_GE(1.0 - curve.missRatio(*size), 0.95 - 1e-6);
  EXPECT_LT(1.0 - curve.missRatio(*size * 97 / 100), 0.95);
  EXPECT_FALSE(curve.smallestSizeFor(0.999).has_value());  // 1% are first reads
  EXPECT_NEAR(static_cast<double>(curve.workingSetBytes()), 1000.0 * kMiB, 0.5);
}

TEST(ShardsCurve, ConcurrentRecordingCountsEveryAccess) {
  ShardsCurve curve({1.0, 100'000});  // every key sampled, never lowered: counts are exact
  constexpr int kThreads = 4, kPerThread = 50'000, kKeys = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&curve, t] {
      for (int i = 0; i < kPerThread; ++i) curve.record(keyHash((i * 7 + t) % kKeys), 1000);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(curve.sampledAccesses(), std::uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(curve.samples(), std::size_t{kKeys});
  // Above the working set only the first access of each key misses.
  EXPECT_NEAR(curve.missRatio(2 * kKeys * 1000), double{kKeys} / (kThreads * kPerThread), 1e-9);
}

TEST(ShardsCurve, ConcurrentRecordingWhileLoweringStaysBounded) {
  ShardsCurve curve({1.0, 512});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&curve, t] {
      for (std::uint64_t i = 0; i < 100'000; ++i) curve.record(keyHash(i * 4 + t), 4096);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(curve.samples(), 512u);
  EXPECT_LT(curve.sampleRate(), 0.01);
}

TEST(ExactLru, MatchesTheIndependentSimulation) {
  const Trace trace = zipfTrace(3000, 60'000, 0.9, 6, [](std::size_t k) { return 1000 + k; });
  const ExactCurve exact(trace);
  ExactLru lru;
  for (const Access& a : trace) lru.record(a.key, a.bytes);
  for (std::uint64_t size = 100'000; size < 5'000'000; size = size * 5 / 4) {
    EXPECT_NEAR(lru.missRatio(size), exact.missRatio(size), 1e-12) << size;
  }
  auto size = lru.smallestSizeFor(0.5);
  ASSERT_TRUE(size.has_value());
  EXPECT_LE(exact.missRatio(*size), 0.5);
  EXPECT_GT(exact.missRatio(*size - 1), 0.5);
}

// The cost of recording (printed, not asserted: machines differ).
TEST(ShardsCurve, CostOfRecording) {
  constexpr int kAccesses = 2'000'000;
  for (double rate : {0.01, 0.1, 1.0}) {
    ShardsCurve curve({rate, 8192});
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kAccesses; ++i) curve.record(keyHash(i % 100'000), 1 << 20);
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    std::printf("  initial rate %.2f: %.1f ns an access; %zu samples, %zu bytes of memory\n", rate,
                took.count() / kAccesses, curve.samples(), curve.memoryBytes());
    EXPECT_GT(curve.sampledAccesses(), 0u);
  }
}

}  // namespace
}  // namespace tierfs::cache
