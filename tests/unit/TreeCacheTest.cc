// fs::TreeCache: warm-up, status and evict of trees over a real DirStore and chunk cache.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fs/HintedPrefetch.h"
#include "fs/TreeCache.h"
#include "tests/unit/FilesystemFixture.h"

namespace tierfs::testing {
namespace {

using backends::FaultOp;
using backends::FaultRule;

// A tree: data/a (4 files of 2.5 chunks), data/b (3 files of one chunk), data/empty, a symlink.
class TreeCacheTest : public FilesystemTest {
 protected:
  void SetUp() override {
    FilesystemTest::SetUp();
    auto data = fsA().mkdir(kRootIno, "data", 0755, {});
    ASSERT_OK(data);
    for (const char* sub : {"a", "b"}) {
      auto d = fsA().mkdir(data->ino, sub, 0755, {});
      ASSERT_OK(d);
      dirs_[sub] = d->ino;
    }
    for (int i = 0; i < 4; ++i) {
      auto ino =
          writeFile(fsA(), dirs_["a"], fmt::format("f{}", i), randomBytes(kChunk * 5 / 2, 100 + i));
      ASSERT_OK(ino);
      inos_.push_back(*ino);
    }
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK(writeFile(fsA(), dirs_["b"], fmt::format("g{}", i), randomBytes(kChunk, 200 + i)));
    }
    ASSERT_OK(writeFile(fsA(), data->ino, "empty", ""));
    ASSERT_OK(fsA().symlink(data->ino, "link", "a/f0", {}));
    // A fresh node: nothing of the tree is in its cache.
    node_ = startNode({});
    ASSERT_NE(node_, nullptr);
    trees_ = std::make_unique<fs::TreeCache>(*node_->volume, *node_->cache);
  }

  Result<control::WarmProgress> warm(const std::vector<std::string>& paths,
                                     std::vector<control::WarmProgress>* reports = nullptr) {
    return trees_->warm(paths, 4, std::chrono::milliseconds(1), [&](const auto& p) {
      if (reports) reports->push_back(p);
      return true;
    });
  }

  static constexpr std::uint64_t kA = 4 * (kChunk * 5 / 2), kB = 3 * kChunk;
  std::map<std::string, Ino> dirs_;
  std::vector<Ino> inos_;
  std::unique_ptr<FsNode> node_;
  std::unique_ptr<fs::TreeCache> trees_;
};

TEST_F(TreeCacheTest, MeasuresExactlyWhatAPartialWarmUpCached) {
  auto before = trees_->measure({"data"});
  ASSERT_OK(before);
  EXPECT_EQ(*before, (control::TreeCounts{8, kA + kB, 1, 0}));  // the empty file is cached

  store_->reset();
  auto warmed = warm({"data/b"});
  ASSERT_OK(warmed);
  EXPECT_TRUE(warmed->finished);
  EXPECT_TRUE(warmed->failures.empty());
  EXPECT_EQ(warmed->total, (control::TreeCounts{3, kB, 0, 0}));
  EXPECT_EQ(warmed->done, (control::TreeCounts{3, kB, 3, kB}));
  EXPECT_GT(warmed->fetchedBytes, 0u);
  EXPECT_EQ(store_->counts().reads, 3u);  // one chunk each

  auto after = trees_->measure({"data"});
  ASSERT_OK(after);
  EXPECT_EQ(*after, (control::TreeCounts{8, kA + kB, 4, kB}));
  auto file = trees_->measure({"data/a/f1"});
  ASSERT_OK(file);
  EXPECT_EQ(*file, (control::TreeCounts{1, kChunk * 5 / 2, 0, 0}));
}

TEST_F(TreeCacheTest, ASecondWarmUpFetchesNothingAndReadsHitTheCache) {
  ASSERT_OK(warm({"data"}));
  store_->reset();
  auto again = warm({"data", "data/a"});
  ASSERT_OK(again);
  EXPECT_EQ(again->fetchedBytes, 0u);
  EXPECT_EQ(store_->counts().reads, 0u);
  EXPECT_EQ(again->done.cachedFiles, again->total.files);
  // The node's reads are served from its cache.
  auto dir = node_->fs->lookup(kRootIno, "data");
  ASSERT_OK(dir);
  auto sub = node_->fs->lookup(dir->ino, "a");
  ASSERT_OK(sub);
  auto file = node_->fs->lookup(sub->ino, "f2");
  ASSERT_OK(file);
  auto data = readFile(*node_->fs, file->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, randomBytes(kChunk * 5 / 2, 102));
  EXPECT_EQ(store_->counts().reads, 0u);
}

TEST_F(TreeCacheTest, EvictDropsATreeOnly) {
  ASSERT_OK(warm({"data"}));
  auto evicted = trees_->evict({"data/a"});
  ASSERT_OK(evicted);
  EXPECT_EQ(*evicted, (control::TreeCounts{4, kA, 4, kA}));
  auto left = trees_->measure({"data"});
  ASSERT_OK(left);
  EXPECT_EQ(*left, (control::TreeCounts{8, kA + kB, 4, kB}));
}

TEST_F(TreeCacheTest, AFileThatCannotBeFetchedIsNamed) {
  faulty_->addRule(FaultRule{.op = FaultOp::kRead, .oidPrefix = fmt::format("c.{:x}.", inos_[1])});
  auto warmed = warm({"data"});
  ASSERT_OK(warmed);
  ASSERT_EQ(warmed->failures.size(), 1u);
  EXPECT_EQ(warmed->failures[0].path, "data/a/f1");
  EXPECT_NE(warmed->failures[0].message.find("injected fault"), std::string::npos);
  EXPECT_EQ(warmed->done.files, 8u);
  EXPECT_EQ(warmed->done.cachedFiles, 7u);
}

TEST_F(TreeCacheTest, ACancelledWarmUpStartsNoMoreChunks) {
  // Each chunk read takes 20 ms; the client goes away at the first report.
  faulty_->addRule(FaultRule{.op = FaultOp::kRead,
                             .oidPrefix = "c.",
                             .action = backends::FaultAction::kDelay,
                             .delay = std::chrono::milliseconds(20)});
  store_->reset();
  int reports = 0;
  auto warmed = trees_->warm({"data"}, 1, std::chrono::milliseconds(1), [&](const auto&) {
    ++reports;
    return false;
  });
  ASSERT_FALSE(warmed);
  EXPECT_EQ(warmed.error().code(), StatusCode::kCancelled);
  EXPECT_LE(store_->counts().reads, 2u);  // of 15 chunks
  auto after = trees_->measure({"data"});
  ASSERT_OK(after);
  EXPECT_LT(after->cachedBytes, kA + kB);
}

TEST_F(TreeCacheTest, BadPathsAreNamed) {
  auto missing = trees_->measure({"data/nope"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.error().message().find("data/nope"), std::string::npos);
  auto up = trees_->measure({"data/../etc"});
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().code(), StatusCode::kInvalidArgument);
  auto root = trees_->measure({"."});
  ASSERT_OK(root);
  EXPECT_EQ(root->files, 8u);
}

// What a hostile or careless client may send: every path is taken below the mount's root, and
// a request with one bad path does nothing at all.
TEST_F(TreeCacheTest, HostilePathsAreRefusedAndDoNothing) {
  ASSERT_OK(warm({"data"}));
  // An absolute path is below the mount's root, never the host's.
  auto etc = trees_->measure({"/etc/passwd"});
  ASSERT_FALSE(etc);
  EXPECT_EQ(etc.error().code(), StatusCode::kNotFound);
  // A name longer than NAME_MAX: ENAMETOOLONG, saying so.
  auto tooLong = trees_->measure({"data/" + std::string(256, 'x')});
  ASSERT_FALSE(tooLong);
  EXPECT_EQ(tooLong.error().toErrno(), ENAMETOOLONG);
  EXPECT_NE(tooLong.error().message().find("256 bytes"), std::string::npos);
  // One bad path among good ones: nothing is evicted.
  auto evicted = trees_->evict({"data/a", "data/../../etc"});
  ASSERT_FALSE(evicted);
  auto left = trees_->measure({"data"});
  ASSERT_OK(left);
  EXPECT_EQ(left->cachedBytes, kA + kB);
}

TEST_F(TreeCacheTest, NamesAtNameMaxAndWithControlCharactersAreWarmed) {
  const std::string longest(NAME_MAX, 'n');
  const std::string odd = "tab\tnew\nline\x1b[31m\xff";
  ASSERT_OK(writeFile(fsA(), dirs_["b"], longest, randomBytes(kChunk, 300)));
  ASSERT_OK(writeFile(fsA(), dirs_["b"], odd, randomBytes(kChunk, 301)));
  node_ = startNode({});
  trees_ = std::make_unique<fs::TreeCache>(*node_->volume, *node_->cache);
  auto warmed = warm({"data/b/" + longest, "data/b/" + odd});
  ASSERT_OK(warmed);
  EXPECT_EQ(warmed->done.cachedFiles, 2u);
  EXPECT_TRUE(warmed->failures.empty());
}

// ---- hinted prefetch ----

// 24 one-chunk files read in a shuffled order that the reader announces first.
class HintedPrefetchTest : public FilesystemTest {
 protected:
  static constexpr int kFiles = 24;

  void SetUp() override {
    FilesystemTest::SetUp();
    auto dir = fsA().mkdir(kRootIno, "d", 0755, {});
    ASSERT_OK(dir);
    for (int i = 0; i < kFiles; ++i) {
      ASSERT_OK(writeFile(fsA(), dir->ino, fmt::format("f{:02}", i), randomBytes(kChunk, 300 + i)));
      order_.push_back(i);
    }
    std::shuffle(order_.begin(), order_.end(), std::mt19937(7));
    node_ = startNode({});  // a fresh node: nothing cached
    ASSERT_NE(node_, nullptr);
  }

  std::vector<std::string> paths() const {
    std::vector<std::string> out;
    for (int i : order_) out.push_back(fmt::format("d/f{:02}", i));
    out.push_back("d/gone");  // a path that does not exist is left out
    return out;
  }

  std::vector<int> order_;
  std::unique_ptr<FsNode> node_;
};

TEST_F(HintedPrefetchTest, TheBackEndSeesTheFilesInHintOrderEachOnce) {
  fs::TreeCache trees(*node_->volume, *node_->cache);
  std::vector<fs::TreeCache::File> files;
  for (auto& f : trees.filesAt(paths())) {
    if (f) files.push_back(std::move(*f));
  }
  ASSERT_EQ(files.size(), static_cast<std::size_t>(kFiles));
  std::vector<std::string> want;
  for (const auto& f : files) want.push_back(f.chunks.at(0).key.objectName());

  store_->reset();
  auto job = std::make_shared<fs::HintedPrefetch>(*node_->cache, files, 4);
  auto watch = node_->fs->watchAccess([job](Ino ino) { job->accessed(ino); });
  auto dir = node_->fs->lookup(kRootIno, "d");
  ASSERT_OK(dir);
  for (int i : order_) {  // the reader, in the order it announced
    auto file = node_->fs->lookup(dir->ino, fmt::format("f{:02}", i));
    ASSERT_OK(file);
    auto data = readFile(*node_->fs, file->ino);
    ASSERT_OK(data);
    EXPECT_EQ(*data, randomBytes(kChunk, 300 + i));
  }
  EXPECT_TRUE(job->finished());
  watch.reset();
  job.reset();  // waits for what it started

  std::vector<std::string> chunkReads;
  for (const auto& oid : store_->counts().readObjects) {
    if (oid.starts_with("c.")) chunkReads.push_back(oid);
  }
  EXPECT_EQ(chunkReads, want);  // in hint order, and once each: the reader joined or hit
  const cache::ChunkCacheStats s = node_->cache->stats();
  EXPECT_EQ(s.backendReads, static_cast<std::uint64_t>(kFiles));
  std::printf("hinted prefetch: %llu of %d reads answered from memory\n",
              static_cast<unsigned long long>(s.memoryHits), kFiles);
}

TEST_F(HintedPrefetchTest, StaysABoundedDistanceAheadOfTheReader) {
  fs::TreeCache trees(*node_->volume, *node_->cache);
  std::vector<fs::TreeCache::File> files;
  for (auto& f : trees.filesAt(paths())) {
    if (f) files.push_back(std::move(*f));
  }
  fs::HintedPrefetch job(*node_->cache, files, 5);
  EXPECT_EQ(job.stats().prefetched, 5u);  // before the reader opened anything
  job.accessed(files[2].ino);             // the reader is at the third file
  EXPECT_EQ(job.stats().position, 3u);
  EXPECT_EQ(job.stats().prefetched, 8u);
  job.accessed(files[0].ino);  // going back does not move the position
  EXPECT_EQ(job.stats().prefetched, 8u);
  job.accessed(999999);  // a file not in the order
  EXPECT_EQ(job.stats().prefetched, 8u);
  EXPECT_FALSE(job.finished());
  job.accessed(files.back().ino);
  EXPECT_TRUE(job.finished());
  EXPECT_EQ(job.stats().prefetched, static_cast<std::uint64_t>(kFiles));
}

TEST_F(HintedPrefetchTest, StaysWithinItsBytesAheadOfTheReader) {
  fs::TreeCache trees(*node_->volume, *node_->cache);
  std::vector<fs::TreeCache::File> files;
  for (auto& f : trees.filesAt(paths())) {
    if (f) files.push_back(std::move(*f));
  }
  fs::HintedPrefetch job(*node_->cache, files, 5, 2 * kChunk);
  EXPECT_EQ(job.stats().prefetched, 2u);  // two files of one chunk: the bytes bound first
  job.accessed(files[0].ino);             // the reader has the first: one more fits
  EXPECT_EQ(job.stats().prefetched, 3u);
  fs::HintedPrefetch tiny(*node_->cache, files, 5, 1);
  EXPECT_EQ(tiny.stats().prefetched, 1u);  // the reader's next file goes whatever its size
}

// ---- dataset sweeps ----

// The memory cache, with room for `room` bytes as if it had devices.
class RoomyCache final : public cache::ChunkCache {
 public:
  RoomyCache(std::unique_ptr<cache::ChunkCache> inner, std::uint64_t room)
      : inner_(std::move(inner)), room_(room) {}
  void read(const cache::ChunkKey& k, cache::Callback<Bytes> d, cache::Priority p) override {
    inner_->read(k, std::move(d), p);
  }
  void write(const cache::ChunkKey& k, Bytes raw, cache::Callback<std::uint64_t> d) override {
    inner_->write(k, std::move(raw), std::move(d));
  }
  void remove(const cache::ChunkKey& k, cache::Callback<std::uint64_t> d) override {
    inner_->remove(k, std::move(d));
  }
  void storedSize(const cache::ChunkKey& k, cache::Callback<std::uint64_t> d) override {
    inner_->storedSize(k, std::move(d));
  }
  bool holds(const cache::ChunkKey& k) const override { return inner_->holds(k); }
  void warm(const cache::ChunkKey& k, cache::Callback<std::uint64_t> d,
            cache::Priority p) override {
    EXPECT_EQ(p, cache::Priority::kSweep);
    inner_->warm(
        k,
        [this, d = std::move(d)](Result<std::uint64_t> r) {
          if (r) room_ -= std::min<std::uint64_t>(room_, *r);
          d(std::move(r));
        },
        p);
  }
  void evict(const cache::ChunkKey& k) override { inner_->evict(k); }
  std::uint64_t roomBytes() const override { return room_; }
  cache::ChunkCacheStats stats() const override { return inner_->stats(); }

 private:
  std::unique_ptr<cache::ChunkCache> inner_;
  std::atomic<std::uint64_t> room_;
};

class DatasetSweepTest : public TreeCacheTest {
 protected:
  // A node whose cache has `room` bytes, sweeping after 6 files.
  void startSweeping(std::uint64_t room) {
    sweeper_ = std::make_unique<FsNode>();
    auto volume = fs::Volume::open(*store_);
    ASSERT_OK(volume);
    sweeper_->volume = std::move(*volume);
    sweeper_->cache = std::make_unique<RoomyCache>(
        cache::makeMemoryChunkCache(*store_, {.capacityBytes = 64 << 20}), room);
    fs::FsOptions options;
    options.sweep = {.after = 6, .headroomBytes = 0};
    sweeper_->fs = std::make_unique<fs::Filesystem>(*sweeper_->volume, *sweeper_->cache, options);
    auto data = sweeper_->fs->lookup(kRootIno, "data");
    ASSERT_OK(data);
    for (const char* sub : {"a", "b"}) {
      auto d = sweeper_->fs->lookup(data->ino, sub);
      ASSERT_OK(d);
      dirsHere_[sub] = d->ino;
    }
  }
  // Opens (and closes) files of data/<sub> in the order given.
  void open(const std::string& sub, const std::vector<int>& files) {
    for (int i : files) {
      auto f = sweeper_->fs->lookup(dirsHere_[sub], fmt::format("{}{}", sub == "a" ? "f" : "g", i));
      ASSERT_OK(f);
      bool keep = false;
      auto opened = sweeper_->fs->open(f->ino, O_RDONLY, &keep);
      ASSERT_OK(opened);
      ASSERT_OK(sweeper_->fs->release(std::move(*opened)));
    }
  }
  control::TreeCounts cachedHere(const std::string& path) {
    fs::TreeCache trees(*sweeper_->volume, *sweeper_->cache);
    auto c = trees.measure({path});
    EXPECT_OK(c);
    return c ? *c : control::TreeCounts{};
  }

  std::unique_ptr<FsNode> sweeper_;
  std::map<std::string, Ino> dirsHere_;
};

TEST_F(DatasetSweepTest, FilesOpenedOutOfOrderAcrossSubdirectoriesSweepTheTree) {
  startSweeping(1 << 30);
  // data/a holds 4 files, data/b 3: six distinct files, shuffled, from both.
  open("b", {2});
  open("a", {3, 0});
  open("b", {0});
  open("a", {2});
  open("b", {1});
  // The sweep runs on its own thread: wait until it has cached all 8 files (or 5 s pass).
  for (int i = 0; i < 500 && cachedHere("data").cachedFiles < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(cachedHere("data"), (control::TreeCounts{8, kA + kB, 8, kA + kB}));
  EXPECT_EQ(sweeper_->fs->sweepStats().sweeps, 1u);  // data, once
}

TEST_F(DatasetSweepTest, FilesOpenedInOrderAreNoSweep) {
  startSweeping(1 << 30);
  open("a", {0, 1, 2, 3});
  open("b", {0, 1, 2});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(sweeper_->fs->sweepStats().sweeps, 0u);
  EXPECT_EQ(cachedHere("data").cachedBytes, 0u);
}

TEST_F(DatasetSweepTest, ASweepStopsBeforeTheCacheWouldEvict) {
  startSweeping(2 * kChunk + kChunk / 2);  // room for two and a half chunks
  open("b", {2});
  open("a", {3, 0});
  open("b", {0});
  open("a", {2});
  open("b", {1});
  for (int i = 0; i < 500 && sweeper_->fs->sweepStats().stoppedFull == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(sweeper_->fs->sweepStats().stoppedFull, 1u);
  EXPECT_LE(cachedHere("data").cachedBytes, 3 * kChunk);
}

}  // namespace
}  // namespace tierfs::testing
