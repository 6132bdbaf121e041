#pragma once

// The object-store contract: one set of test bodies (StoreContractTests.cc) that every
// ObjectStore must pass. Each test binary instantiates it with its stores:
//   INSTANTIATE_TEST_SUITE_P(Dir, StoreContractTest, ::testing::Values(dirStoreTarget()));

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "backends/ObjectStore.h"
#include "backends/SyncStore.h"

namespace tierfs::testing {

// Opens a fresh, empty store for one test. `holder` keeps whatever the store needs alive
// (a temporary directory, a RADOS namespace) and is destroyed after the store.
struct StoreTarget {
  std::string name;
  std::function<std::unique_ptr<backends::ObjectStore>(std::shared_ptr<void>& holder)> open;
  // How long usage() may take to count new objects (and, on a fresh cluster, to answer at all).
  // Zero: the count is exact at once and the store holds only this test's objects.
  Duration usageSettles{};
};

inline std::string PrintToString(const StoreTarget& t) { return t.name; }

class StoreContractTest : public ::testing::TestWithParam<StoreTarget> {
 protected:
  void SetUp() override {
    store_ = GetParam().open(holder_);
    ASSERT_NE(store_, nullptr) << "could not open the " << GetParam().name << " store";
    sync_ = std::make_unique<backends::SyncStore>(*store_);
  }
  void TearDown() override {
    sync_.reset();
    store_.reset();
    holder_.reset();
  }

  backends::ObjectStore& store() { return *store_; }
  backends::SyncStore& sync() { return *sync_; }

 private:
  std::shared_ptr<void> holder_;
  std::unique_ptr<backends::ObjectStore> store_;
  std::unique_ptr<backends::SyncStore> sync_;
};

}  // namespace tierfs::testing
