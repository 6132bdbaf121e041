#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "backends/DirStore.h"
#include "backends/SyncStore.h"
#include "tests/support/Assertions.h"
#include "tests/support/StoreContract.h"
#include "tests/support/TempDir.h"

namespace tierfs::testing {
namespace {

using backends::DirStore;
using backends::DirStoreOptions;

StoreTarget dirStoreTarget() {
  return {"Dir", [](std::shared_ptr<void>& holder) -> std::unique_ptr<backends::ObjectStore> {
            auto dir = std::make_shared<TempDir>();
            holder = dir;
            auto store = DirStore::open(DirStoreOptions{.root = dir->path() / "store"});
            if (!store) {
              ADD_FAILURE() << store.error().toString();
              return nullptr;
            }
            return std::move(*store);
          }};
}

INSTANTIATE_TEST_SUITE_P(Dir, StoreContractTest, ::testing::Values(dirStoreTarget()),
                         [](const auto& info) { return info.param.name; });

TEST(DirStoreTest, ContentSurvivesReopen) {
  TempDir dir;
  DirStoreOptions options{.root = dir.path()};
  {
    auto store = DirStore::open(options);
    ASSERT_OK(store);
    backends::SyncStore s(**store);
    ASSERT_OK(s.mutate("obj", std::move(backends::WriteOp().writeFull("hello").omapSet("k", "v"))));
  }
  auto store = DirStore::open(options);
  ASSERT_OK(store);
  backends::SyncStore s(**store);
  auto data = s.read("obj");
  ASSERT_OK(data);
  EXPECT_EQ(*data, "hello");
  auto omap = s.omapGet("obj", {"k"});
  ASSERT_OK(omap);
  EXPECT_EQ(omap->at("k"), "v");
}

TEST(DirStoreTest, SecondOpenOfTheSameStoreIsRefused) {
  TempDir dir;
  auto first = DirStore::open(DirStoreOptions{.root = dir.path()});
  ASSERT_OK(first);
  auto second = DirStore::open(DirStoreOptions{.root = dir.path()});
  EXPECT_CODE(second, StatusCode::kUnavailable);
  EXPECT_NE(second.error().message().find("in use"), std::string::npos)
      << second.error().toString();
}

TEST(DirStoreTest, RefusesANonEmptyDirectoryThatIsNotAStore) {
  TempDir dir;
  std::ofstream(dir.path() / "precious.txt") << "keep me";
  auto store = DirStore::open(DirStoreOptions{.root = dir.path()});
  EXPECT_CODE(store, StatusCode::kInvalidArgument);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "precious.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "meta"));
}

TEST(DirStoreTest, WithoutCreateAMissingStoreIsNotFound) {
  TempDir dir;
  auto store = DirStore::open(DirStoreOptions{.root = dir.path() / "none", .create = false});
  EXPECT_CODE(store, StatusCode::kNotFound);
}

TEST(DirStoreTest, ReplacedDataFilesAreRemoved) {
  TempDir dir;
  auto store = DirStore::open(DirStoreOptions{.root = dir.path()});
  ASSERT_OK(store);
  backends::SyncStore s(**store);
  for (int i = 0; i < 5; ++i) ASSERT_OK(s.writeFull("obj", std::string(1000, 'a' + i)));
  ASSERT_OK(s.writeFull("other", "x"));
  ASSERT_OK(s.remove("other"));
  std::size_t files = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir.path() / "data")) {
    files += e.is_regular_file();
  }
  EXPECT_EQ(files, 1u);
}

TEST(DirStoreTest, UsageCountsObjectsAlreadyThereAtOpen) {
  TempDir dir;
  DirStoreOptions options{.root = dir.path()};
  {
    auto store = DirStore::open(options);
    ASSERT_OK(store);
    backends::SyncStore s(**store);
    for (int i = 0; i < 5; ++i) ASSERT_OK(s.writeFull("obj." + std::to_string(i), "x"));
  }
  auto store = DirStore::open(options);
  ASSERT_OK(store);
  backends::SyncStore s(**store);
  ASSERT_OK(s.remove("obj.0"));  // a change before the first count, then one after it
  auto u = s.usage();
  ASSERT_OK(u);
  EXPECT_EQ(u->objects, 4u);
  ASSERT_OK(s.writeFull("obj.9", "y"));
  u = s.usage();
  ASSERT_OK(u);
  EXPECT_EQ(u->objects, 5u);
  EXPECT_GT(u->totalBytes, 0u);
  EXPECT_GE(u->totalBytes, u->usedBytes);
  EXPECT_GE(u->totalBytes, u->availBytes);
}

// The first usage() call counts the records on a snapshot while writers create and remove
// objects; the count must still come out exact.
TEST(DirStoreTest, UsageCountStaysExactWhileWritersRun) {
  TempDir dir;
  DirStoreOptions options{.root = dir.path(), .durable = false};
  {
    auto store = DirStore::open(options);
    ASSERT_OK(store);
    backends::SyncStore s(**store);
    for (int i = 0; i < 2000; ++i) ASSERT_OK(s.writeFull("old." + std::to_string(i), ""));
  }
  auto store = DirStore::open(options);
  ASSERT_OK(store);
  backends::SyncStore s(**store);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      backends::SyncStore w(**store);
      for (int i = 0; !stop; ++i) {
        const std::string own = "new." + std::to_string(t) + "." + std::to_string(i % 50);
        // Creates for the first 50 rounds, then alternately removes and recreates; and
        // removes old objects of its own share.
        if (!w.writeFull(own, "x")) ++failures;
        if (i % 3 == 0 && !w.remove(own)) ++failures;
        if (i < 100 && !w.remove("old." + std::to_string(t * 500 + i))) ++failures;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int i = 0; i < 5; ++i) EXPECT_OK(s.usage());  // the first one counts during the writes
  stop = true;
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0);
  std::uint64_t listed = 0;
  std::string cursor;
  for (;;) {
    auto page = s.listObjects(cursor, 1000);
    ASSERT_OK(page);
    listed += page->names.size();
    if (!page->more) break;
    cursor = page->nextCursor;
  }
  auto u = s.usage();
  ASSERT_OK(u);
  EXPECT_EQ(u->objects, listed);
}

}  // namespace
}  // namespace tierfs::testing
