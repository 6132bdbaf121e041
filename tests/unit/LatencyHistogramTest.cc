#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "backends/DirStore.h"
#include "backends/FaultyStore.h"
#include "backends/SyncStore.h"
#include "common/LatencyHistogram.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"

namespace tierfs::testing {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(LatencyHistogram, CountsEachObservationInTheFirstBucketThatHoldsIt) {
  LatencyHistogram h;
  h.observe(microseconds(10));          // <= 25 us
  h.observe(microseconds(25));          // <= 25 us: bounds are inclusive, as Prometheus's `le`
  h.observe(microseconds(26));          // <= 50 us
  h.observe(milliseconds(3));           // <= 5 ms
  h.observe(std::chrono::seconds(60));  // +Inf
  const LatencyHistogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.counts[0], 2u);
  EXPECT_EQ(s.counts[1], 1u);
  EXPECT_EQ(s.counts[7], 1u);  // 5 ms is the eighth bound
  EXPECT_EQ(s.counts[LatencyHistogram::kBuckets - 1], 1u);
  EXPECT_EQ(s.count(), 5u);
  EXPECT_EQ(s.sumNs, 10'000u + 25'000 + 26'000 + 3'000'000 + 60'000'000'000);
}

TEST(LatencyHistogram, ConcurrentObservationsAreAllCounted) {
  LatencyHistogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 50'000; ++i) h.observe(microseconds(t * 300 + i % 7));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(h.snapshot().count(), 200'000u);
}

enum class TestOp { kA, kB, kCount };

TEST(OpMetrics, KeepsLatencyPerOperationAndFailuresPerStatus) {
  OpMetrics<TestOp> m;
  m.record(TestOp::kA, microseconds(40), StatusCode::kOk);
  m.record(TestOp::kA, microseconds(40), StatusCode::kNotFound);
  m.record(TestOp::kB, milliseconds(2), StatusCode::kTimedOut);
  EXPECT_EQ(m.latency(TestOp::kA).snapshot().count(), 2u);
  EXPECT_EQ(m.latency(TestOp::kB).snapshot().count(), 1u);
  EXPECT_EQ(m.errors(TestOp::kA, StatusCode::kNotFound), 1u);
  EXPECT_EQ(m.errors(TestOp::kA, StatusCode::kTimedOut), 0u);
  EXPECT_EQ(m.errors(TestOp::kB, StatusCode::kTimedOut), 1u);
  EXPECT_EQ(m.errors(TestOp::kB, StatusCode::kOk), 0u);  // successes are not failures
}

class StoreMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = backends::DirStore::open(backends::DirStoreOptions{.root = dir_.path()});
    ASSERT_OK(store);
    store_ = std::move(*store);
  }
  TempDir dir_;
  std::unique_ptr<backends::DirStore> store_;
};

TEST_F(StoreMetricsTest, EveryCallIsTimedAndFailuresCountedByStatus) {
  backends::StoreMetrics metrics;
  backends::SyncStore sync(*store_);
  ASSERT_OK(sync.writeFull("a", "hello"));  // before metrics: not recorded
  store_->setMetrics(&metrics);
  ASSERT_OK(sync.read("a"));
  ASSERT_OK(sync.read("a"));
  EXPECT_FALSE(sync.stat("missing").has_value());
  ASSERT_OK(sync.writeFull("b", "x"));
  using backends::StoreOp;
  EXPECT_EQ(metrics.latency(StoreOp::kRead).snapshot().count(), 2u);
  EXPECT_EQ(metrics.latency(StoreOp::kStat).snapshot().count(), 1u);
  EXPECT_EQ(metrics.errors(StoreOp::kStat, StatusCode::kNotFound), 1u);
  EXPECT_EQ(metrics.latency(StoreOp::kMutate).snapshot().count(), 1u);
  EXPECT_EQ(metrics.errors(StoreOp::kRead, StatusCode::kNotFound), 0u);
  EXPECT_EQ(backends::storeOpName(StoreOp::kOmapList), "omap_list");
}

TEST_F(StoreMetricsTest, ACallCutByItsDeadlineCountsAsTimedOut) {
  backends::FaultyStore faulty(*store_, 1);
  faulty.addRule(backends::FaultRule{
      .op = backends::FaultOp::kRead, .count = 1, .action = backends::FaultAction::kHang});
  backends::StoreMetrics metrics;
  faulty.setMetrics(&metrics);
  auto r =
      backends::SyncStore(faulty).read("a", 0, backends::kToEnd, Deadline::after(milliseconds(50)));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kTimedOut);
  EXPECT_EQ(metrics.errors(backends::StoreOp::kRead, StatusCode::kTimedOut), 1u);
  const auto s = metrics.latency(backends::StoreOp::kRead).snapshot();
  EXPECT_EQ(s.count(), 1u);
  EXPECT_GE(s.sumNs, 40'000'000u);  // it waited for its deadline
  faulty.releaseHung();
}

}  // namespace
}  // namespace tierfs::testing
