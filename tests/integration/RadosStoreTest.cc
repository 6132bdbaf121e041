// The store contract and RadosStore's own behaviour, on the real test cluster.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

#include "backends/RadosStore.h"
#include "backends/SyncStore.h"
#include "tests/support/Assertions.h"
#include "tests/support/ClusterEnv.h"
#include "tests/support/StoreContract.h"
#include "tests/support/TempDir.h"

namespace tierfs::testing {
namespace {

using backends::RadosOptions;
using backends::RadosStore;

RadosOptions clusterOptionsOrFail() {
  std::string error;
  auto options = testClusterOptions(error);
  if (!options) {
    ADD_FAILURE() << error;
    return {};
  }
  return *options;
}

// Every test gets a RADOS namespace of its own: a fresh, empty store on a shared pool.
std::string freshNamespace() {
  static std::atomic<int> next{0};
  return "test-" + std::to_string(::getpid()) + "-" + std::to_string(next++);
}

StoreTarget radosTarget() {
  return {"Rados",
          [](std::shared_ptr<void>&) -> std::unique_ptr<backends::ObjectStore> {
            auto options = clusterOptionsOrFail();
            if (options.pool.empty()) return nullptr;
            options.nspace = freshNamespace();
            auto store = RadosStore::connect(options);
            if (!store) {
              ADD_FAILURE() << store.error().toString();
              return nullptr;
            }
            return std::move(*store);
          },
          // Pool statistics reach the monitor through ceph-mgr every second or two on the test
          // cluster (and the mgr's first report can take a while after the cluster starts).
          std::chrono::seconds(60)};
}

INSTANTIATE_TEST_SUITE_P(Rados, StoreContractTest, ::testing::Values(radosTarget()),
                         [](const auto& info) { return info.param.name; });

TEST(RadosStoreTest, MissingPoolIsNotFound) {
  auto options = clusterOptionsOrFail();
  ASSERT_FALSE(options.pool.empty());
  options.pool = "no-such-pool";
  auto store = RadosStore::connect(options);
  EXPECT_CODE(store, StatusCode::kNotFound);
  EXPECT_NE(store.error().message().find("no-such-pool"), std::string::npos);
}

TEST(RadosStoreTest, UnreachableClusterFailsWithinTheTimeout) {
  TempDir dir;
  auto conf = dir.path() / "ceph.conf";
  // Port 9 on loopback: nothing listens there, so the monitor can never be reached.
  std::ofstream(conf) << "[global]\nmon_host = 127.0.0.1:9\nauth_client_required = none\n";
  RadosOptions options;
  options.conf = conf;
  options.pool = "tierfs";
  options.timeout = std::chrono::seconds(2);
  auto start = Clock::now();
  auto store = RadosStore::connect(options);
  auto waited = Clock::now() - start;
  EXPECT_CODE(store, StatusCode::kUnavailable);
  EXPECT_LT(waited, std::chrono::seconds(15));
}

TEST(RadosStoreTest, QueuedRequestsBeyondTheInFlightLimitAllComplete) {
  auto options = clusterOptionsOrFail();
  ASSERT_FALSE(options.pool.empty());
  options.nspace = freshNamespace();
  options.maxInFlight = 2;
  auto store = RadosStore::connect(options);
  ASSERT_OK(store);
  constexpr int kCalls = 50;
  std::atomic<int> ok{0}, answered{0};
  std::promise<void> all;
  for (int i = 0; i < kCalls; ++i) {
    (*store)->writeFull("q." + std::to_string(i), std::string(4096, 'a' + i % 26),
                        [&](Result<std::uint64_t> r) {
                          if (r) ++ok;
                          if (++answered == kCalls) all.set_value();
                        });
  }
  all.get_future().wait();
  EXPECT_EQ(ok.load(), kCalls);
  backends::SyncStore s(**store);
  auto r = s.read("q.27");
  ASSERT_OK(r);
  EXPECT_EQ(*r, std::string(4096, 'a' + 27 % 26));
}

}  // namespace
}  // namespace tierfs::testing
