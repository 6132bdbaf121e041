#include <gtest/gtest.h>

#include "backends/DirStore.h"
#include "backends/FaultyStore.h"
#include "backends/SyncStore.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"

namespace tierfs::testing {
namespace {

using backends::FaultAction;
using backends::FaultOp;
using backends::FaultRule;
using backends::FaultyStore;
using backends::SyncStore;
using backends::WriteOp;

class FaultyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = backends::DirStore::open(backends::DirStoreOptions{.root = dir_.path()});
    ASSERT_OK(store);
    inner_ = std::move(*store);
    ASSERT_OK(SyncStore(*inner_).writeFull("data.1", "hello"));
  }

  TempDir dir_;
  std::unique_ptr<backends::DirStore> inner_;
};

TEST_F(FaultyStoreTest, NoRulesMeansPassThrough) {
  FaultyStore faulty(*inner_, 1);
  auto r = SyncStore(faulty).read("data.1");
  ASSERT_OK(r);
  EXPECT_EQ(*r, "hello");
  EXPECT_EQ(faulty.injected(), 0u);
}

TEST_F(FaultyStoreTest, FailReturnsTheInjectedErrorOnMatchingCallsOnly) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.op = FaultOp::kRead,
                           .oidPrefix = "data.",
                           .action = FaultAction::kFail,
                           .error = Status::unavailable("osd down")});
  SyncStore s(faulty);
  auto r = s.read("data.1");
  EXPECT_CODE(r, StatusCode::kUnavailable);
  EXPECT_NE(r.error().message().find("osd down"), std::string::npos);
  EXPECT_OK(s.stat("data.1"));                          // another operation
  EXPECT_CODE(s.read("other"), StatusCode::kNotFound);  // another prefix reaches the store
  EXPECT_EQ(faulty.injected(), 1u);
}

TEST_F(FaultyStoreTest, CountRetiresARule) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.count = 2});
  SyncStore s(faulty);
  EXPECT_CODE(s.read("data.1"), StatusCode::kIoError);
  EXPECT_CODE(s.stat("data.1"), StatusCode::kIoError);
  EXPECT_OK(s.read("data.1"));
}

TEST_F(FaultyStoreTest, ProbabilityIsSeededAndReplays) {
  auto pattern = [&](std::uint64_t seed) {
    FaultyStore faulty(*inner_, seed);
    faulty.addRule(FaultRule{.probability = 0.5});
    SyncStore s(faulty);
    std::string hits;
    for (int i = 0; i < 64; ++i) hits += s.stat("data.1") ? '.' : 'x';
    return hits;
  };
  auto a = pattern(7);
  EXPECT_EQ(a, pattern(7));
  EXPECT_NE(a.find('x'), std::string::npos);
  EXPECT_NE(a.find('.'), std::string::npos);
}

TEST_F(FaultyStoreTest, DelayHoldsTheCallThenAnswers) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.action = FaultAction::kDelay, .delay = std::chrono::milliseconds(150)});
  auto start = Clock::now();
  EXPECT_OK(SyncStore(faulty).read("data.1"));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(150));
}

TEST_F(FaultyStoreTest, FailAfterApplyLosesOnlyTheReply) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.op = FaultOp::kMutate,
                           .action = FaultAction::kFailAfterApply,
                           .error = Status::timedOut("reply lost")});
  EXPECT_CODE(SyncStore(faulty).writeFull("data.2", "applied"), StatusCode::kTimedOut);
  auto r = SyncStore(*inner_).read("data.2");
  ASSERT_OK(r);
  EXPECT_EQ(*r, "applied");
}

TEST_F(FaultyStoreTest, CorruptReadFlipsAByte) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.op = FaultOp::kRead, .action = FaultAction::kCorruptRead});
  auto r = SyncStore(faulty).read("data.1");
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 5u);
  EXPECT_NE(*r, "hello");
}

TEST_F(FaultyStoreTest, HangIsCutByTheDeadlineAndCanBeReleased) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.op = FaultOp::kMutate, .count = 1, .action = FaultAction::kHang});
  SyncStore s(faulty);
  auto r = s.writeFull("data.3", "late", Deadline::after(std::chrono::milliseconds(100)));
  EXPECT_CODE(r, StatusCode::kTimedOut);
  EXPECT_NE(r.error().message().find("data.3"), std::string::npos) << r.error().toString();
  EXPECT_EQ(faulty.hungCalls(), 1u);
  EXPECT_CODE(SyncStore(*inner_).stat("data.3"), StatusCode::kNotFound);
  faulty.releaseHung();  // its deadline has passed: the store does not start it late
  EXPECT_EQ(faulty.hungCalls(), 0u);
  EXPECT_OK(s.writeFull("data.3", "now"));
}

TEST_F(FaultyStoreTest, UsageFaultsHitUsageOnly) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.op = FaultOp::kUsage,
                           .count = 1,
                           .action = FaultAction::kFail,
                           .error = Status::unavailable("no mgr")});
  SyncStore s(faulty);
  EXPECT_OK(s.stat("data.1"));
  auto r = s.usage();
  EXPECT_CODE(r, StatusCode::kUnavailable);
  EXPECT_NE(r.error().message().find("no mgr"), std::string::npos) << r.error().toString();
  // The base class names the call and the store.
  EXPECT_NE(r.error().message().find("usage of 'faulty dir store"), std::string::npos)
      << r.error().toString();
  auto passed = s.usage();  // the rule has retired: the inner store answers
  ASSERT_OK(passed);
  EXPECT_EQ(passed->objects, 1u);
  EXPECT_EQ(faulty.injected(), 1u);
}

TEST_F(FaultyStoreTest, UsageNamesNoObjectSoPrefixedRulesMissIt) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.oidPrefix = "data."});
  SyncStore s(faulty);
  EXPECT_CODE(s.stat("data.1"), StatusCode::kIoError);
  EXPECT_OK(s.usage());
  EXPECT_EQ(faulty.injected(), 1u);
}

TEST_F(FaultyStoreTest, HungUsageIsCutByTheDeadline) {
  FaultyStore faulty(*inner_, 1);
  faulty.addRule(FaultRule{.op = FaultOp::kUsage, .count = 1, .action = FaultAction::kHang});
  SyncStore s(faulty);
  auto start = Clock::now();
  auto r = s.usage(Deadline::after(std::chrono::milliseconds(100)));
  EXPECT_CODE(r, StatusCode::kTimedOut);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(100));
  EXPECT_NE(r.error().message().find("usage of"), std::string::npos) << r.error().toString();
  EXPECT_EQ(faulty.hungCalls(), 1u);
  faulty.releaseHung();  // its late answer goes nowhere
  EXPECT_OK(s.usage());
}

}  // namespace
}  // namespace tierfs::testing
