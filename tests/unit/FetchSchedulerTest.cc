// cache::FetchScheduler: priorities, raising a queued read, the background share, the bandwidth
// cap; and, through the chunk cache, a reader's latency while a warm-up runs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/DirStore.h"
#include "backends/FaultyStore.h"
#include "backends/SyncStore.h"
#include "cache/ChunkCache.h"
#include "cache/FetchScheduler.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"
#include "tests/support/TestData.h"

namespace tierfs::cache {
namespace {

using backends::FaultAction;
using backends::FaultOp;
using backends::FaultRule;
using testing::TempDir;

// A DirStore with objects o0..o{n-1} (and chunks, for the cache test) behind a FaultyStore that
// makes every read take `delay`.
class FetchSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = backends::DirStore::open({.root = dir_.path(), .durable = false});
    ASSERT_OK(dir);
    dirStore_ = std::move(*dir);
    faulty_ = std::make_unique<backends::FaultyStore>(*dirStore_, 1);
    for (int i = 0; i < 40; ++i) {
      ASSERT_OK(backends::SyncStore(*dirStore_).writeFull(fmt::format("o{}", i), "x"));
    }
  }
  void delayReads(Duration delay) {
    faulty_->addRule(
        FaultRule{.op = FaultOp::kRead, .action = FaultAction::kDelay, .delay = delay});
  }

  // Records the order in which reads complete.
  struct Order {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> done;
    void add(const std::string& oid) {
      std::lock_guard lock(mu);
      done.push_back(oid);
      cv.notify_all();
    }
    void waitFor(std::size_t n) {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return done.size() >= n; }));
    }
  };
  void read(FetchScheduler& s, const std::string& oid, Priority p, Order& order,
            std::uint64_t bytes = 1) {
    s.read(oid, p, bytes, [&order, oid](Result<Bytes> r) {
      EXPECT_OK(r);
      order.add(oid);
    });
  }

  // Chunks {ino, 1, 0..n-1} of `bytes` random bytes each, in the back end only (written
  // through the cache, then evicted from it).
  static void storeChunks(ChunkCache& cache, std::uint64_t ino, std::uint32_t n,
                          std::size_t bytes) {
    for (std::uint32_t i = 0; i < n; ++i) {
      ASSERT_OK(backends::waitFor<std::uint64_t>([&](auto cb) {
        cache.write(ChunkKey{ino, 1, i}, Bytes(testing::randomBytes(bytes, i)), cb);
      }));
      cache.evict(ChunkKey{ino, 1, i});
    }
  }
  // Reads chunk {ino, 1, piece} through the cache at priority p, and waits for it.
  static Result<Bytes> readChunk(ChunkCache& cache, std::uint64_t ino, std::uint32_t piece,
                                 Priority p) {
    return backends::waitFor<Bytes>([&](auto cb) { cache.read(ChunkKey{ino, 1, piece}, cb, p); });
  }

  TempDir dir_{TempDir::memoryBase()};
  std::unique_ptr<backends::DirStore> dirStore_;
  std::unique_ptr<backends::FaultyStore> faulty_;
};

TEST_F(FetchSchedulerTest, MoreUrgentReadsGoFirst) {
  delayReads(std::chrono::milliseconds(30));
  FetchScheduler s(*faulty_, {.maxInFlight = 1, .backgroundPercent = 100});
  Order order;
  read(s, "o0", Priority::kWarm, order);  // starts at once: the slot is free
  read(s, "o1", Priority::kWarm, order);
  read(s, "o2", Priority::kSweep, order);
  read(s, "o3", Priority::kReadAhead, order);
  read(s, "o4", Priority::kDemand, order);
  read(s, "o5", Priority::kWarm, order);
  s.raise("o5", Priority::kDemand);  // a reader wants what a warm-up queued
  order.waitFor(6);
  EXPECT_EQ(order.done, (std::vector<std::string>{"o0", "o4", "o5", "o3", "o2", "o1"}));
  EXPECT_EQ(s.stats().raised, 1u);
  EXPECT_EQ(s.stats().started[0], 2u);
}

TEST_F(FetchSchedulerTest, BackgroundWorkLeavesSlotsForReaders) {
  delayReads(std::chrono::milliseconds(50));
  FetchScheduler s(*faulty_, {.maxInFlight = 4, .backgroundPercent = 50});
  Order order;
  for (int i = 0; i < 10; ++i) read(s, fmt::format("o{}", i), Priority::kWarm, order);
  EXPECT_EQ(s.stats().inFlight, 2u);  // half of the slots
  EXPECT_EQ(s.stats().queued[3], 8u);
  read(s, "o20", Priority::kDemand, order);
  read(s, "o21", Priority::kDemand, order);
  EXPECT_EQ(s.stats().inFlight, 4u);  // the readers did not wait
  order.waitFor(12);
}

TEST_F(FetchSchedulerTest, TheBandwidthCapSlowsBackgroundWorkOnly) {
  // 10 MiB/s with a bucket of 8 MiB: six reads of 4 MiB take at least (24 - 8) / 10 = 1.6 s.
  FetchScheduler s(*faulty_, {.maxInFlight = 16, .backgroundBytesPerSecond = 10 << 20});
  Order order;
  const auto start = Clock::now();
  for (int i = 0; i < 6; ++i) read(s, fmt::format("o{}", i), Priority::kWarm, order, 4 << 20);
  read(s, "o30", Priority::kDemand, order, 4 << 20);
  order.waitFor(2);
  const double demandSecs = std::chrono::duration<double>(Clock::now() - start).count();
  order.waitFor(7);
  const double allSecs = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("bandwidth cap: 24 MiB of warm-up at 10 MiB/s took %.2f s; the demand read %.3f s\n",
              allSecs, demandSecs);
  EXPECT_GE(allSecs, 1.2);
  EXPECT_LT(demandSecs, allSecs / 2);
}

// The check: while a warm-up of a large tree keeps the back end busy, a reader's chunk
// is fetched ahead of it. Each back-end read takes 10 ms and 8 run at once; 300 chunks of
// warm-up are queued. The same read at warm-up priority shows what the reader would wait
// without priorities.
TEST_F(FetchSchedulerTest, AReadersLatencyStaysLowWhileAWarmUpRuns) {
  delayReads(std::chrono::milliseconds(10));
  auto cache = makeMemoryChunkCache(
      *faulty_, {.fetch = {.maxInFlight = 8, .backgroundPercent = 50}, .chunkBytes = 1 << 10});
  for (std::uint64_t i = 0; i < 302; ++i) {
    ASSERT_OK(backends::waitFor<std::uint64_t>([&](auto cb) {
      cache->write(ChunkKey{1, 1, static_cast<std::uint32_t>(i)},
                   Bytes(testing::randomBytes(1000, i)), cb);
    }));
  }
  cache->evict(ChunkKey{1, 1, 300});
  cache->evict(ChunkKey{1, 1, 301});
  for (std::uint64_t i = 0; i < 300; ++i)
    cache->evict(ChunkKey{1, 1, static_cast<std::uint32_t>(i)});

  std::atomic<int> warmed{0};
  for (std::uint32_t i = 0; i < 300; ++i) {
    cache->warm(ChunkKey{1, 1, i}, [&](Result<std::uint64_t> r) {
      EXPECT_OK(r);
      ++warmed;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the warm-up is under way
  auto timed = [&](std::uint32_t piece, Priority p) {
    const auto start = Clock::now();
    auto got = backends::waitFor<Bytes>([&](auto cb) {
      cache->read(ChunkKey{1, 1, piece}, cb, p);
    });
    EXPECT_OK(got);
    if (got) {
      EXPECT_EQ(got->view(), testing::randomBytes(1000, piece));
    }
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  const double demand = timed(300, Priority::kDemand);
  const int warmedBeforeDemand = warmed;
  const double behind = timed(301, Priority::kWarm);
  std::printf(
      "reader's chunk during a 300-chunk warm-up (10 ms a read, 8 at once): %.1f ms as a "
      "demand read, %.1f ms queued behind the warm-up (%d of 300 warmed when the demand "
      "read returned)\n",
      demand, behind, warmedBeforeDemand);
  EXPECT_LT(demand, behind / 4);
  while (warmed < 300) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// Prefetch accuracy: chunks fetched ahead of readers, and those a reader then asked for.
TEST_F(FetchSchedulerTest, CountsPrefetchedChunksAndThoseReadAfterwards) {
  auto cache = makeMemoryChunkCache(*faulty_, {.chunkBytes = 1 << 10});
  storeChunks(*cache, 2, 3, 500);
  auto read = [&](std::uint32_t piece, Priority p) { return readChunk(*cache, 2, piece, p); };
  ASSERT_OK(read(0, Priority::kReadAhead));
  ASSERT_OK(read(1, Priority::kReadAhead));
  ASSERT_OK(read(2, Priority::kDemand));  // fetched for a reader: not a prefetch
  ASSERT_OK(read(0, Priority::kDemand));  // the read-ahead paid off
  ASSERT_OK(read(0, Priority::kDemand));  // counted once
  // A reader that catches up with a read-ahead still under way: it paid off too.
  cache->evict(ChunkKey{2, 1, 2});
  delayReads(std::chrono::milliseconds(100));
  cache->read(
      ChunkKey{2, 1, 2}, [](Result<Bytes> r) { EXPECT_OK(r); }, Priority::kReadAhead);
  ASSERT_OK(read(2, Priority::kDemand));
  const ChunkCacheStats s = cache->stats();
  EXPECT_EQ(s.prefetchedChunks, 3u);
  EXPECT_EQ(s.prefetchUsed, 2u);
  EXPECT_EQ(s.backendReads, 4u);
}

// A chunk fetched ahead that memory let go of before a reader came was not used: the reader's
// read fetches it again (a read-ahead window larger than the memory cache does that).
TEST_F(FetchSchedulerTest, APrefetchEvictedBeforeItIsReadIsNotCountedAsUsed) {
  // Room for two of the 4 KiB slab slots that chunks of 900 bytes occupy.
  auto cache = makeMemoryChunkCache(*faulty_, {.capacityBytes = 8192, .chunkBytes = 1 << 10});
  storeChunks(*cache, 3, 4, 900);
  auto read = [&](std::uint32_t piece, Priority p) { return readChunk(*cache, 3, piece, p); };
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_OK(read(i, Priority::kReadAhead));  // 0 goes
  ASSERT_OK(read(0, Priority::kDemand));  // fetched again: the prefetch was wasted
  ASSERT_OK(read(2, Priority::kDemand));  // still in memory: used
  ASSERT_OK(read(3, Priority::kReadAhead));
  cache->evict(ChunkKey{3, 1, 3});  // dropped by command before a reader came
  ASSERT_OK(read(3, Priority::kDemand));
  const ChunkCacheStats s = cache->stats();
  EXPECT_EQ(s.prefetchedChunks, 4u);
  EXPECT_EQ(s.prefetchUsed, 1u);
  EXPECT_EQ(s.backendReads, 6u);
}

// Memory is charged what a chunk's buffer occupies (its slab slot), not the chunk's length: room
// for three 8 KiB slots keeps three chunks of 4,097 bytes, not five.
TEST_F(FetchSchedulerTest, MemoryIsChargedTheSlotAChunkOccupies) {
  auto cache = makeMemoryChunkCache(*faulty_, {.capacityBytes = 3 * 8192, .chunkBytes = 1 << 10});
  storeChunks(*cache, 4, 5, 4097);
  for (std::uint32_t i = 0; i < 5; ++i) ASSERT_OK(readChunk(*cache, 4, i, Priority::kDemand));
  ASSERT_EQ(cache->stats().backendReads, 5u);
  for (std::uint32_t i = 2; i < 5; ++i) ASSERT_OK(readChunk(*cache, 4, i, Priority::kDemand));
  EXPECT_EQ(cache->stats().backendReads, 5u) << "the last three are kept";
  ASSERT_OK(readChunk(*cache, 4, 0, Priority::kDemand));
  EXPECT_EQ(cache->stats().backendReads, 6u) << "the first was let go for them";
}

}  // namespace
}  // namespace tierfs::cache
