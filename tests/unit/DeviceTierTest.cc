// The chunk cache with a cache device (a real file through io_uring, a real RocksDB index) over a
// counting store: reads go through the device, writes go through to it, concurrent misses make
// one back-end read, and the admission and compression settings do what they say.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include "backends/DirStore.h"
#include "backends/FaultyStore.h"
#include "backends/SyncStore.h"
#include "cache/ChunkCache.h"
#include "cache/ChunkCodec.h"
#include "cache/DeviceTier.h"
#include "tests/support/CountingStore.h"
#include "tests/support/TempDir.h"

namespace tierfs::testing {
namespace {

using cache::Admission;
using cache::ChunkKey;
using cache::DeviceTier;
using cache::DeviceTierOptions;

std::string randomBytes(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

class DeviceTierTest : public ::testing::Test {
 protected:
  void SetUp() override { openAll(); }

  void openAll() {
    chunks_.reset();
    tier_.reset();
    if (!dirStore_) {
      auto store = backends::DirStore::open({.root = dir_.path() / "store", .durable = false});
      ASSERT_TRUE(store) << store.error().toString();
      dirStore_ = std::move(*store);
      faulty_ = std::make_unique<backends::FaultyStore>(*dirStore_, 1);  // no faults unless asked
      store_ = std::make_unique<CountingStore>(*faulty_);
    }
    DeviceTierOptions o = options_;
    o.devices = {{(dir_.path() / "cache0").string(), 64 << 20}};
    o.regions.regionSize = 1 << 20;
    o.owner = owner_;
    auto tier = DeviceTier::open(o);
    ASSERT_TRUE(tier) << tier.error().toString();
    tier_ = std::move(*tier);
    // No memory tier: every read that is not in flight reaches the device.
    chunks_ = cache::makeMemoryChunkCache(
        *store_, {.capacityBytes = 0, .device = tier_.get(), .deviceThreads = 4});
  }

  Result<Bytes> read(const ChunkKey& key) {
    return backends::waitFor<Bytes>([&](auto cb) { chunks_->read(key, cb); });
  }
  Status write(const ChunkKey& key, const std::string& raw) {
    return statusOf(
        backends::waitFor<std::uint64_t>([&](auto cb) { chunks_->write(key, Bytes(raw), cb); }));
  }
  // A chunk object put in the store behind the cache's back, as another node would.
  void putChunk(const ChunkKey& key, const std::string& raw) {
    auto frame = cache::encodeChunk(raw);
    ASSERT_TRUE(frame);
    ASSERT_TRUE(backends::waitFor<std::uint64_t>([&](auto cb) {
      dirStore_->createExclusive(key.objectName(), Bytes(std::move(*frame)), cb);
    }));
  }

  TempDir dir_;
  DeviceTierOptions options_;
  std::string owner_ = "volume-a";
  std::unique_ptr<backends::ObjectStore> dirStore_;
  std::unique_ptr<backends::FaultyStore> faulty_;
  std::unique_ptr<CountingStore> store_;
  std::unique_ptr<DeviceTier> tier_;
  std::unique_ptr<cache::ChunkCache> chunks_;
};

TEST_F(DeviceTierTest, TheSecondReadComesFromTheDevice) {
  const ChunkKey key{7, 1, 0};
  const std::string raw = randomBytes(300'000, 1);
  putChunk(key, raw);
  ASSERT_EQ(read(key)->view(), raw);
  ASSERT_EQ(read(key)->view(), raw);
  auto s = chunks_->stats();
  EXPECT_EQ(store_->counts().reads, 1u);
  EXPECT_EQ(s.backendReads, 1u);
  EXPECT_EQ(s.deviceHits, 1u);
}

TEST_F(DeviceTierTest, ConcurrentMissesOfOneChunkMakeOneBackEndRead) {
  const ChunkKey key{8, 1, 0};
  const std::string raw = randomBytes(600 << 10, 2);  // fits a region: a late thread hits it
  putChunk(key, raw);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&] {
      auto got = read(key);
      if (!got || got->view() != raw) ++wrong;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(store_->counts().reads, 1u);
}

TEST_F(DeviceTierTest, WrittenChunksAreReadBackFromTheDevice) {
  const ChunkKey key{9, 3, 1};
  const std::string raw = randomBytes(500'000, 3);
  ASSERT_TRUE(write(key, raw).isOk());
  ASSERT_EQ(read(key)->view(), raw);
  EXPECT_EQ(store_->counts().reads, 0u);
  EXPECT_EQ(chunks_->stats().deviceHits, 1u);
}

TEST_F(DeviceTierTest, ARestartKeepsTheCacheAndAnotherVolumeEmptiesIt) {
  const ChunkKey key{10, 1, 0};
  const std::string raw = randomBytes(100'000, 4);
  putChunk(key, raw);
  ASSERT_TRUE(read(key));
  openAll();  // a clean restart
  ASSERT_EQ(read(key)->view(), raw);
  EXPECT_EQ(store_->counts().reads, 1u);
  owner_ = "volume-b";
  openAll();
  EXPECT_FALSE(tier_->contains(key));
}

// Removing the cache file to clear the cache, and keeping its index, used to leave an index that
// named bytes the new file did not hold: every hit a checksum mismatch, and the device soon taken
// out of service. The device's label says it is not the one the index was made for.
TEST_F(DeviceTierTest, ARecreatedCacheFileComesBackEmptyAndInService) {
  std::vector<ChunkKey> keys;
  for (std::uint32_t i = 0; i < 12; ++i) {
    keys.push_back({15, 1, i});
    putChunk(keys.back(), randomBytes(300'000, 300 + i));
    ASSERT_TRUE(read(keys.back()));
  }
  openAll();  // a clean restart: every entry sealed and recorded
  ASSERT_TRUE(tier_->contains(keys[0]));
  chunks_.reset();
  tier_.reset();
  std::filesystem::remove(dir_.path() / "cache0");
  openAll();
  for (std::uint32_t i = 0; i < keys.size(); ++i) {
    EXPECT_FALSE(tier_->contains(keys[i]));
    ASSERT_EQ(read(keys[i])->view(), randomBytes(300'000, 300 + i));
  }
  const cache::RegionCacheStats s = tier_->stats();
  EXPECT_EQ(s.corruptions, 0u);
  EXPECT_EQ(s.failedDevices, 0u);
  openAll();  // and the new file's label is kept: what it cached survives a restart
  EXPECT_TRUE(tier_->contains(keys[0]));
}

TEST_F(DeviceTierTest, SecondMissAdmissionKeepsOneOffReadsAndWritesOut) {
  options_.admission = Admission::kSecondMiss;
  openAll();
  const ChunkKey once{11, 1, 0}, twice{12, 1, 0}, written{13, 1, 0};
  putChunk(once, randomBytes(100'000, 5));
  putChunk(twice, randomBytes(100'000, 6));
  ASSERT_TRUE(read(once));
  ASSERT_TRUE(read(twice));
  ASSERT_TRUE(read(twice));  // its second miss: admitted
  ASSERT_TRUE(write(written, randomBytes(100'000, 7)).isOk());
  EXPECT_FALSE(tier_->contains(once));
  EXPECT_TRUE(tier_->contains(twice));
  EXPECT_FALSE(tier_->contains(written));
  EXPECT_EQ(chunks_->stats().deviceNotAdmitted, 3u);  // once, twice's first miss, written
}

// A sweep or warm-up and a reader that want the same chunk at the same time share one back-end
// read, whichever asked first, and the chunk is kept as a warm-up's (admitted even where a
// reader's first miss is not).
TEST_F(DeviceTierTest, AWarmUpAndAReaderOfOneChunkShareOneFetch) {
  options_.admission = Admission::kSecondMiss;
  openAll();
  const ChunkKey warmedFirst{15, 1, 0}, readFirst{16, 1, 0};
  const std::string rawA = randomBytes(100'000, 8), rawB = randomBytes(100'000, 9);
  putChunk(warmedFirst, rawA);
  putChunk(readFirst, rawB);
  // Long enough that the second asker always finds the first one's fetch under way.
  faulty_->addRule(backends::FaultRule{.op = backends::FaultOp::kRead,
                                       .action = backends::FaultAction::kDelay,
                                       .delay = std::chrono::milliseconds(300)});

  std::promise<Result<std::uint64_t>> warmA;
  chunks_->warm(warmedFirst, [&](Result<std::uint64_t> r) { warmA.set_value(r); });
  auto gotA = read(warmedFirst);  // joins the warm-up's fetch
  ASSERT_TRUE(gotA);
  EXPECT_EQ(gotA->view(), rawA);
  auto fetchedA = warmA.get_future().get();
  ASSERT_TRUE(fetchedA);
  EXPECT_GT(*fetchedA, 0u);  // the warm-up that started the fetch reports its bytes

  std::promise<Result<Bytes>> readB;
  chunks_->read(readFirst, [&](Result<Bytes> r) { readB.set_value(std::move(r)); });
  auto warmB = backends::waitFor<std::uint64_t>(
      [&](auto cb) { chunks_->warm(readFirst, cb, cache::Priority::kSweep); });
  ASSERT_TRUE(warmB) << warmB.error().toString();
  EXPECT_EQ(*warmB, 0u);  // it joined the reader's fetch
  auto gotB = readB.get_future().get();
  ASSERT_TRUE(gotB);
  EXPECT_EQ(gotB->view(), rawB);

  EXPECT_EQ(store_->counts().reads, 2u);
  EXPECT_TRUE(tier_->contains(warmedFirst));
  EXPECT_TRUE(tier_->contains(readFirst));  // a first miss, kept because a warm-up joined it
}

TEST_F(DeviceTierTest, CompressedChunksTakeLessRoomUnlessKeptDecompressed) {
  const std::string text(512 << 10, 'a');  // compresses to almost nothing
  putChunk({14, 1, 0}, text);
  ASSERT_EQ(read({14, 1, 0})->view(), text);
  EXPECT_EQ(chunks_->stats().deviceRawBytes, text.size());
  EXPECT_LT(chunks_->stats().deviceFramedBytes * 10, text.size());

  options_.storeCompressed = false;
  owner_ = "volume-raw";  // a fresh cache
  openAll();
  ASSERT_EQ(read({14, 1, 0})->view(), text);
  EXPECT_EQ(chunks_->stats().deviceRawBytes, text.size());
  EXPECT_GT(chunks_->stats().deviceFramedBytes, text.size());  // a raw frame: header and all
  ASSERT_EQ(read({14, 1, 0})->view(), text);  // from the device, decoded from a raw frame
  EXPECT_EQ(chunks_->stats().deviceHits, 1u);
}

TEST_F(DeviceTierTest, TheDevicesAndIndexStayWithinTheConfiguredSize) {
  for (std::uint32_t i = 0; i < 150; ++i) {
    const ChunkKey key{20, 1, i};
    putChunk(key, randomBytes(700'000, 100 + i));  // 100 MiB through a 64 MiB cache
    ASSERT_TRUE(read(key));
    ASSERT_LE(tier_->occupiedBytes(), 64u << 20) << "after " << i;
  }
  EXPECT_GT(chunks_->stats().deviceEvictedRegions, 0u);
}

TEST_F(DeviceTierTest, ARegionHoldsAWholeNumberOfChunksOfItsSize) {
  // Four 256 KiB chunks fill a 1 MiB region: their entries' headers go into the region's headroom
  // (without it, the fourth did not fit and a quarter of the device stayed empty).
  for (std::uint32_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(write({21, 1, i}, randomBytes(256 << 10, 200 + i)).isOk());
  }
  openAll();  // seals the open region
  const cache::RegionCacheStats s = tier_->stats();
  EXPECT_EQ(s.entries, 8u);
  EXPECT_EQ(s.sealedRegions, 2u);
  for (std::uint32_t i = 0; i < 8; ++i)
    ASSERT_EQ(read({21, 1, i})->view(), randomBytes(256 << 10, 200 + i));
  EXPECT_EQ(store_->counts().reads, 0u);
}

TEST(DeviceTierOptions, AFirstDeviceTooSmallForARegionBesideItsIndexIsRefused) {
  TempDir dir;
  DeviceTierOptions o;
  o.devices = {{(dir.path() / "cache0").string(), 20 << 20}};  // the index takes 16 MiB
  o.regions.regionSize = 16 << 20;
  auto tier = DeviceTier::open(o);
  ASSERT_FALSE(tier);
  EXPECT_NE(tier.error().message().find("holds no region"), std::string::npos);
}

TEST(DeviceTierOptions, ABlockDeviceNeedsAnIndexDirectory) {
  DeviceTierOptions o;
  o.devices = {{"/dev/nvme9n1", 1ull << 30}};
  auto tier = DeviceTier::open(o);
  ASSERT_FALSE(tier);
  EXPECT_NE(tier.error().message().find("index_dir"), std::string::npos);
}

TEST(DeviceTierOptions, ACacheFileUnderDevShmKeepsItsIndexBesideIt) {
  struct stat shm {
  }, dev{};
  if (::stat("/dev/shm", &shm) != 0 || ::stat("/dev", &dev) != 0 || shm.st_dev == dev.st_dev) {
    GTEST_SKIP() << "/dev/shm is not a filesystem of its own here";
  }
  TempDir dir("/dev/shm");
  DeviceTierOptions o;
  o.devices = {{(dir.path() / "cache0").string(), 64 << 20}};
  o.regions.regionSize = 1 << 20;
  auto tier = DeviceTier::open(o);
  ASSERT_TRUE(tier) << tier.error().toString();
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "cache0.index"));
}

}  // namespace
}  // namespace tierfs::testing
