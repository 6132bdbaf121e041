// fs::TreeCache: warm-up, status and evict of trees over a real DirStore and chunk cache.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace tierfs::testing
