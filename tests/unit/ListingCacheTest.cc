// Directory listings in the cache index: IndexDb's listing records, ListingCache's budget and
// counters, and fs::Filesystem listing directories through it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cache/IndexDb.h"
#include "cache/ListingCache.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"
#include "tests/unit/FilesystemFixture.h"

namespace tierfs::cache {
namespace {

using testing::TempDir;
using Entries = std::vector<std::pair<std::string, std::string>>;

Entries makeEntries(int n, const std::string& tag) {
  Entries out;
  for (int i = 0; i < n; ++i)
    out.emplace_back(fmt::format("name-{:04}", i), tag + std::to_string(i));
  return out;
}

std::uint64_t bytesOf(const Entries& entries) {
  std::uint64_t n = 0;
  for (const auto& [k, v] : entries) n += k.size() + v.size();
  return n;
}

class IndexDbListingTest : public ::testing::Test {
 protected:
  void SetUp() override { reopen("one"); }
  void reopen(const std::string& identity) {
    db_.reset();
    auto db = IndexDb::open(dir_.path() / "index", identity);
    ASSERT_OK(db);
    db_ = std::move(*db);
  }
  void put(std::uint64_t dir, std::uint64_t version, const Entries& entries) {
    ASSERT_OK(db_->putListing({dir, version, bytesOf(entries), entries.size()}, entries));
  }
  // The whole listing, read in pages of `page`; nullopt when not held at `version`.
  std::optional<Entries> readAll(std::uint64_t dir, std::uint64_t version, std::uint32_t page) {
    Entries all;
    std::string after;
    for (;;) {
      auto got = db_->readListing(dir, version, after, page);
      EXPECT_OK(got);
      if (!got || !*got) return std::nullopt;
      EXPECT_LE((*got)->entries.size(), page);
      for (auto& e : (*got)->entries) all.push_back(std::move(e));
      if (!(*got)->more) return all;
      after = all.back().first;
    }
  }

  TempDir dir_;
  std::unique_ptr<IndexDb> db_;
};

TEST_F(IndexDbListingTest, ReadsAListingInPagesAtItsVersionOnly) {
  const Entries entries = makeEntries(25, "v");
  put(7, 42, entries);
  EXPECT_EQ(readAll(7, 42, 10), entries);
  EXPECT_EQ(readAll(7, 42, 25), entries);
  EXPECT_EQ(readAll(7, 41, 10), std::nullopt);  // the directory has changed since
  EXPECT_EQ(readAll(8, 42, 10), std::nullopt);  // never listed
}

TEST_F(IndexDbListingTest, APutReplacesTheOldListingWhole) {
  put(7, 1, makeEntries(30, "old"));
  const Entries fewer = makeEntries(5, "new");
  put(7, 2, fewer);
  EXPECT_EQ(readAll(7, 2, 100), fewer);  // no name of the old listing is left over
  EXPECT_EQ(readAll(7, 1, 100), std::nullopt);
}

TEST_F(IndexDbListingTest, NeighbouringDirectoriesDoNotMix) {
  const std::uint64_t dirs[] = {0, 1, 255, 256, std::numeric_limits<std::uint64_t>::max()};
  for (std::uint64_t d : dirs) put(d, d + 1, makeEntries(3, fmt::format("dir{}-", d)));
  ASSERT_OK(db_->dropListing(256));
  for (std::uint64_t d : dirs) {
    if (d == 256) {
      EXPECT_EQ(readAll(d, d + 1, 10), std::nullopt);
    } else {
      EXPECT_EQ(readAll(d, d + 1, 10), makeEntries(3, fmt::format("dir{}-", d))) << d;
    }
  }
  std::vector<std::uint64_t> headers;
  ASSERT_OK(db_->forEachListing([&](const ListingHeader& h) {
    headers.push_back(h.dir);
    EXPECT_EQ(h.version, h.dir + 1);
    EXPECT_EQ(h.count, 3u);
  }));
  EXPECT_EQ(headers,
            (std::vector<std::uint64_t>{0, 1, 255, std::numeric_limits<std::uint64_t>::max()}));
}

TEST_F(IndexDbListingTest, ListingsSurviveAReopenAndGoWithAnotherIdentity) {
  put(3, 9, makeEntries(4, "x"));
  reopen("one");
  EXPECT_EQ(readAll(3, 9, 10), makeEntries(4, "x"));
  reopen("two");  // another volume's directory 3 is another directory
  EXPECT_EQ(readAll(3, 9, 10), std::nullopt);
}

// ---- ListingCache ----

class ListingCacheTest : public IndexDbListingTest {
 protected:
  std::unique_ptr<ListingCache> open(std::uint64_t budget) {
    auto cache = ListingCache::open(*db_, budget);
    EXPECT_OK(cache);
    return cache ? std::move(*cache) : nullptr;
  }
};

TEST_F(ListingCacheTest, HoldsAListingAtItsVersionAndCounts) {
  auto cache = open(1 << 20);
  const Entries entries = makeEntries(10, "v");
  EXPECT_FALSE(cache->holds(5, 1));
  cache->store(5, 1, entries);
  EXPECT_TRUE(cache->holds(5, 1));
  EXPECT_FALSE(cache->holds(5, 2));
  auto page = cache->read(5, 1, "", 100);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->entries, entries);
  cache->drop(5);
  EXPECT_FALSE(cache->holds(5, 1));
  EXPECT_FALSE(cache->read(5, 1, "", 100));
  const ListingCacheStats s = cache->stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.stored, 1u);
  EXPECT_EQ(s.listings, 0u);
  EXPECT_EQ(s.bytes, 0u);
}

TEST_F(ListingCacheTest, DropsTheLeastRecentlyUsedListingForRoom) {
  const Entries entries = makeEntries(10, "v");  // 10 x 11 bytes
  const std::uint64_t one = bytesOf(entries);
  auto cache = open(8 * one + one / 2);  // room for eight, and one may take an eighth
  for (std::uint64_t d = 1; d <= 8; ++d) cache->store(d, 1, entries);
  EXPECT_TRUE(cache->holds(1, 1));  // 1 is now the most recently used; 2 the least
  cache->store(9, 1, entries);
  EXPECT_FALSE(cache->holds(2, 1));
  EXPECT_FALSE(cache->read(2, 1, "", 100));  // gone from the database too
  for (std::uint64_t d : {1, 3, 4, 5, 6, 7, 8, 9}) EXPECT_TRUE(cache->holds(d, 1)) << d;
  const ListingCacheStats s = cache->stats();
  EXPECT_EQ(s.evicted, 1u);
  EXPECT_EQ(s.listings, 8u);
  EXPECT_EQ(s.bytes, 8 * one);
  EXPECT_LE(s.bytes, s.budgetBytes);
}

TEST_F(ListingCacheTest, KeepsNoListingLargerThanAnEighthOfTheBudget) {
  auto cache = open(8 * 1000);
  cache->store(1, 1, makeEntries(10, "v"));
  cache->store(1, 2, makeEntries(200, "v"));  // ~3 KB: too large; the old one is stale anyway
  EXPECT_FALSE(cache->holds(1, 1));
  EXPECT_FALSE(cache->holds(1, 2));
  EXPECT_EQ(cache->stats().tooLarge, 1u);
  EXPECT_EQ(cache->stats().bytes, 0u);
}

TEST_F(ListingCacheTest, FindsTheListingsKeptBeforeARestart) {
  {
    auto cache = open(1 << 20);
    cache->store(1, 4, makeEntries(3, "a"));
    cache->store(2, 5, makeEntries(6, "b"));
  }
  reopen("one");
  auto cache = open(1 << 20);
  EXPECT_EQ(cache->stats().listings, 2u);
  EXPECT_EQ(cache->stats().bytes, bytesOf(makeEntries(3, "a")) + bytesOf(makeEntries(6, "b")));
  EXPECT_TRUE(cache->holds(2, 5));
  auto page = cache->read(2, 5, "name-0002", 2);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->entries, (Entries{{"name-0003", "b3"}, {"name-0004", "b4"}}));
  EXPECT_TRUE(page->more);
}

}  // namespace
}  // namespace tierfs::cache

// ---- fs::Filesystem with a listing cache ----

namespace tierfs::testing {
namespace {

class FilesystemListingTest : public FilesystemTest {
 protected:
  static constexpr int kEntries = 250;

  void SetUp() override {
    FilesystemTest::SetUp();
    openListings();
    a_.reset();
    a_ = startNode(options_, listings_.get());
    auto dir = fsA().mkdir(kRootIno, "d", 0755, {});
    ASSERT_OK(dir);
    dirIno_ = dir->ino;
    for (int i = 0; i < kEntries; ++i) {
      auto link = fsA().symlink(dirIno_, fmt::format("f{:03}", i), "t", {});
      ASSERT_OK(link);
      fsA().forget(link->ino, 1);
    }
  }

  void openListings() {
    listings_.reset();
    db_.reset();
    auto db = cache::IndexDb::open(indexDir_.path() / "index", "volume");
    ASSERT_OK(db);
    db_ = std::move(*db);
    auto listings = cache::ListingCache::open(*db_, 64 << 20);
    ASSERT_OK(listings);
    listings_ = std::move(*listings);
  }

  static std::vector<std::string> listNames(fs::Filesystem& f, Ino dir) {
    std::vector<std::string> names;
    auto cursor = f.opendir(dir);
    EXPECT_OK(cursor);
    if (!cursor) return names;
    EXPECT_OK(f.readdir(**cursor, 0, [&](const fs::DirEntry& e) {
      names.emplace_back(e.name);
      return true;
    }));
    return names;
  }

  fs::FsOptions options_{.readdirPage = 100};
  TempDir indexDir_;
  std::unique_ptr<cache::IndexDb> db_;
  std::unique_ptr<cache::ListingCache> listings_;
  Ino dirIno_ = 0;
};

TEST_F(FilesystemListingTest, ASecondListingReadsNoPageFromTheStore) {
  store_->reset();
  const auto first = listNames(fsA(), dirIno_);
  ASSERT_EQ(first.size(), kEntries + 2u);
  EXPECT_EQ(store_->counts().omapLists, 3u);  // 250 entries in pages of 100
  store_->reset();
  EXPECT_EQ(listNames(fsA(), dirIno_), first);
  EXPECT_EQ(store_->counts().omapLists, 0u);
  EXPECT_EQ(store_->counts().stats, 1u);  // the directory's version, checked
  EXPECT_EQ(listings_->stats().hits, 1u);
}

TEST_F(FilesystemListingTest, AChangeOnAnyNodeIsListed) {
  (void)listNames(fsA(), dirIno_);
  auto b = startNode(options_);  // another node, without the cache
  ASSERT_NE(b, nullptr);
  ASSERT_OK(b->fs->lookup(kRootIno, "d"));
  auto link = b->fs->symlink(dirIno_, "from-b", "t", {});
  ASSERT_OK(link);
  b->fs->forget(link->ino, 1);
  auto names = listNames(fsA(), dirIno_);
  EXPECT_EQ(names.size(), kEntries + 3u);
  EXPECT_NE(std::find(names.begin(), names.end(), "from-b"), names.end());
  ASSERT_OK(fsA().unlink(dirIno_, "f000"));  // and here
  names = listNames(fsA(), dirIno_);
  EXPECT_EQ(std::find(names.begin(), names.end(), "f000"), names.end());
  EXPECT_EQ(names.size(), kEntries + 2u);
}

TEST_F(FilesystemListingTest, ARestartedNodeListsAndLooksUpFromTheCache) {
  const auto first = listNames(fsA(), dirIno_);
  a_.reset();
  openListings();  // the daemon restarted: the index is read back from disk
  a_ = startNode(options_, listings_.get());
  ASSERT_NE(a_, nullptr);
  ASSERT_OK(fsA().lookup(kRootIno, "d"));
  store_->reset();
  EXPECT_EQ(listNames(fsA(), dirIno_), first);
  // A burst of lookups (a DataLoader) lists the directory on the second miss: from the cache.
  for (const char* name : {"f010", "f200", "f123", "f042"}) {
    auto got = fsA().lookup(dirIno_, name);
    ASSERT_OK(got);
    fsA().forget(got->ino, 1);
  }
  EXPECT_EQ(store_->counts().omapLists, 0u);
  EXPECT_EQ(listings_->stats().hits, 2u);
}

}  // namespace
}  // namespace tierfs::testing
