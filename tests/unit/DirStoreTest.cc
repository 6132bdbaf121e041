#include <gtest/gtest.h>

#include <fstream>

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

}  // namespace
}  // namespace tierfs::testing
