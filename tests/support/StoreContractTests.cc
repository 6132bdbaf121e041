// The contract every ObjectStore honours. Compiled into each test binary that instantiates
// StoreContractTest (see StoreContract.h).
#include <atomic>
#include <chrono>
#include <thread>

#include "backends/FaultyStore.h"
#include "tests/support/Assertions.h"
#include "tests/support/StoreContract.h"
#include "tests/support/TestData.h"

namespace tierfs::testing {
namespace {

using backends::FaultAction;
using backends::FaultOp;
using backends::FaultRule;
using backends::kToEnd;
using backends::OmapListArgs;
using backends::WriteOp;

TEST_P(StoreContractTest, WriteThenReadWholeAndRanges) {
  const std::string data = randomBytes(10000, 1);
  ASSERT_OK(sync().writeFull("obj", data));
  auto whole = sync().read("obj");
  ASSERT_OK(whole);
  EXPECT_EQ(*whole, data);
  auto middle = sync().read("obj", 100, 50);
  ASSERT_OK(middle);
  EXPECT_EQ(*middle, data.substr(100, 50));
  auto tail = sync().read("obj", 9990, 1000);  // runs past the end: only what exists
  ASSERT_OK(tail);
  EXPECT_EQ(*tail, data.substr(9990));
  auto past = sync().read("obj", 20000, 10);
  ASSERT_OK(past);
  EXPECT_TRUE(past->empty());
}

TEST_P(StoreContractTest, WriteFullReplacesContent) {
  ASSERT_OK(sync().writeFull("obj", std::string(5000, 'a')));
  ASSERT_OK(sync().writeFull("obj", "short"));
  auto r = sync().read("obj");
  ASSERT_OK(r);
  EXPECT_EQ(*r, "short");
  ASSERT_OK(sync().writeFull("obj", ""));
  auto st = sync().stat("obj");
  ASSERT_OK(st);
  EXPECT_EQ(st->size, 0u);
}

TEST_P(StoreContractTest, StatReportsSizeAndAVersionThatGrows) {
  ASSERT_OK(sync().writeFull("obj", std::string(1234, 'x')));
  auto first = sync().stat("obj");
  ASSERT_OK(first);
  EXPECT_EQ(first->size, 1234u);
  EXPECT_GT(first->mtimeSec, 0);
  auto v2 = sync().mutate("obj", std::move(WriteOp().setXattr("k", "v")));
  ASSERT_OK(v2);
  auto second = sync().stat("obj");
  ASSERT_OK(second);
  EXPECT_GT(second->version, first->version);
  EXPECT_EQ(second->version, *v2);
}

TEST_P(StoreContractTest, MissingObjectIsNotFoundEverywhere) {
  EXPECT_CODE(sync().read("nope"), StatusCode::kNotFound);
  EXPECT_CODE(sync().stat("nope"), StatusCode::kNotFound);
  EXPECT_CODE(sync().getXattr("nope", "a"), StatusCode::kNotFound);
  EXPECT_CODE(sync().omapGet("nope", {"a"}), StatusCode::kNotFound);
  EXPECT_CODE(sync().omapList("nope", {}), StatusCode::kNotFound);
  EXPECT_CODE(sync().remove("nope"), StatusCode::kNotFound);
  EXPECT_CODE(sync().mutate("nope", std::move(WriteOp().assertExists().setXattr("a", "b"))),
              StatusCode::kNotFound);
  EXPECT_CODE(sync().stat("nope"), StatusCode::kNotFound);  // the failed guard created nothing
  auto r = sync().read("nope");
  EXPECT_NE(r.error().message().find("'nope'"), std::string::npos) << r.error().toString();
}

TEST_P(StoreContractTest, CreateExclusiveRefusesAnExistingObject) {
  ASSERT_OK(sync().createExclusive("obj", "first"));
  EXPECT_CODE(sync().createExclusive("obj", "second"), StatusCode::kAlreadyExists);
  auto r = sync().read("obj");
  ASSERT_OK(r);
  EXPECT_EQ(*r, "first");
}

TEST_P(StoreContractTest, RemoveDeletesDataXattrsAndOmap) {
  ASSERT_OK(sync().mutate(
      "obj", std::move(WriteOp().writeFull("data").setXattr("x", "1").omapSet("k", "v"))));
  ASSERT_OK(sync().remove("obj"));
  EXPECT_CODE(sync().stat("obj"), StatusCode::kNotFound);
  ASSERT_OK(sync().writeFull("obj", "again"));
  EXPECT_CODE(sync().getXattr("obj", "x"), StatusCode::kNotFound);
  auto omap = sync().omapGet("obj", {"k"});
  ASSERT_OK(omap);
  EXPECT_TRUE(omap->empty());
}

TEST_P(StoreContractTest, XattrsSetGetAndMissing) {
  ASSERT_OK(sync().writeFull("obj", "data"));
  ASSERT_OK(sync().mutate("obj", std::move(WriteOp().setXattr("a", "1").setXattr("b", "two"))));
  auto a = sync().getXattr("obj", "a");
  ASSERT_OK(a);
  EXPECT_EQ(*a, "1");
  auto b = sync().getXattr("obj", "b");
  ASSERT_OK(b);
  EXPECT_EQ(*b, "two");
  EXPECT_CODE(sync().getXattr("obj", "c"), StatusCode::kNotFound);
  auto data = sync().read("obj");  // xattrs leave the data alone
  ASSERT_OK(data);
  EXPECT_EQ(*data, "data");
}

TEST_P(StoreContractTest, OmapSetGetRemove) {
  WriteOp op;
  for (int i = 0; i < 10; ++i) op.omapSet("key" + std::to_string(i), "value" + std::to_string(i));
  ASSERT_OK(sync().mutate("dir", std::move(op)));
  auto got = sync().omapGet("dir", {"key3", "key7", "absent"});
  ASSERT_OK(got);
  EXPECT_EQ(got->size(), 2u);
  EXPECT_EQ(got->at("key3"), "value3");
  EXPECT_EQ(got->at("key7"), "value7");
  ASSERT_OK(sync().mutate("dir", std::move(WriteOp().omapRemove("key3").omapSet("key7", "new"))));
  got = sync().omapGet("dir", {"key3", "key7"});
  ASSERT_OK(got);
  EXPECT_EQ(got->count("key3"), 0u);
  EXPECT_EQ(got->at("key7"), "new");
}

TEST_P(StoreContractTest, OmapListHonoursPrefixAndStartAfter) {
  WriteOp op;
  for (const char* k : {"a1", "a2", "a3", "b1", "b2", "c1"}) op.omapSet(k, std::string("v") + k);
  ASSERT_OK(sync().mutate("dir", std::move(op)));
  auto all = sync().omapList("dir", {});
  ASSERT_OK(all);
  ASSERT_EQ(all->entries.size(), 6u);
  EXPECT_EQ(all->entries.front().first, "a1");
  EXPECT_EQ(all->entries.back().second, "vc1");
  EXPECT_FALSE(all->more);
  auto bs = sync().omapList("dir", OmapListArgs{"b", "", 100});
  ASSERT_OK(bs);
  ASSERT_EQ(bs->entries.size(), 2u);
  EXPECT_EQ(bs->entries[0].first, "b1");
  EXPECT_EQ(bs->entries[1].first, "b2");
  auto after = sync().omapList("dir", OmapListArgs{"a", "a1", 1});
  ASSERT_OK(after);
  ASSERT_EQ(after->entries.size(), 1u);
  EXPECT_EQ(after->entries[0].first, "a2");
  EXPECT_TRUE(after->more);
  auto none = sync().omapList("dir", OmapListArgs{"a", "a3", 10});
  ASSERT_OK(none);
  EXPECT_TRUE(none->entries.empty());
  EXPECT_FALSE(none->more);
}

// A cached directory listing is checked by the version a page was read at (cache/ListingCache).
TEST_P(StoreContractTest, OmapPageCarriesTheObjectVersion) {
  ASSERT_OK(sync().mutate("dir", std::move(WriteOp().omapSet("a", "1"))));
  auto stat = sync().stat("dir");
  ASSERT_OK(stat);
  auto page = sync().omapList("dir", {});
  ASSERT_OK(page);
  EXPECT_EQ(page->version, stat->version);
  ASSERT_OK(sync().mutate("dir", std::move(WriteOp().omapSet("b", "2"))));
  auto later = sync().omapList("dir", {});
  ASSERT_OK(later);
  EXPECT_NE(later->version, page->version);
  auto restat = sync().stat("dir");
  ASSERT_OK(restat);
  EXPECT_EQ(later->version, restat->version);
}

TEST_P(StoreContractTest, FailedGuardAppliesNothing) {
  ASSERT_OK(sync().mutate("dir", std::move(WriteOp().writeFull("old").omapSet("name", "v1"))));
  auto before = sync().stat("dir");
  ASSERT_OK(before);
  auto r = sync().mutate("dir", std::move(WriteOp()
                                              .omapEquals("name", "v0")
                                              .writeFull("new")
                                              .omapSet("name", "v2")
                                              .omapSet("other", "x")
                                              .setXattr("x", "y")));
  EXPECT_CODE(r, StatusCode::kPreconditionFailed);
  auto data = sync().read("dir");
  ASSERT_OK(data);
  EXPECT_EQ(*data, "old");
  auto omap = sync().omapList("dir", {});
  ASSERT_OK(omap);
  ASSERT_EQ(omap->entries.size(), 1u);
  EXPECT_EQ(omap->entries[0].second, "v1");
  EXPECT_CODE(sync().getXattr("dir", "x"), StatusCode::kNotFound);
  auto after = sync().stat("dir");
  ASSERT_OK(after);
  EXPECT_EQ(after->version, before->version);

  r = sync().mutate("dir", std::move(WriteOp().xattrEquals("gen", "7").omapSet("name", "v3")));
  EXPECT_CODE(r, StatusCode::kPreconditionFailed);
}

TEST_P(StoreContractTest, PassingGuardsApplyEverything) {
  ASSERT_OK(sync().mutate("dir", std::move(WriteOp().setXattr("gen", "1").omapSet("n", "a"))));
  ASSERT_OK(sync().mutate("dir", std::move(WriteOp()
                                               .assertExists()
                                               .xattrEquals("gen", "1")
                                               .omapEquals("n", "a")
                                               .setXattr("gen", "2")
                                               .omapSet("n", "b")
                                               .writeFull("payload"))));
  auto gen = sync().getXattr("dir", "gen");
  ASSERT_OK(gen);
  EXPECT_EQ(*gen, "2");
  auto omap = sync().omapGet("dir", {"n"});
  ASSERT_OK(omap);
  EXPECT_EQ(omap->at("n"), "b");
  auto data = sync().read("dir");
  ASSERT_OK(data);
  EXPECT_EQ(*data, "payload");
}

TEST_P(StoreContractTest, AbsentKeyOrXattrComparesEqualToEmpty) {
  ASSERT_OK(sync().writeFull("obj", "x"));
  ASSERT_OK(sync().mutate("obj", std::move(WriteOp().omapEquals("missing", "").omapSet("k", "1"))));
  ASSERT_OK(
      sync().mutate("obj", std::move(WriteOp().xattrEquals("missing", "").setXattr("a", "1"))));
  EXPECT_CODE(
      sync().mutate("obj", std::move(WriteOp().omapEquals("missing", "v").omapSet("k", "2"))),
      StatusCode::kPreconditionFailed);
  auto omap = sync().omapGet("obj", {"k"});
  ASSERT_OK(omap);
  EXPECT_EQ(omap->at("k"), "1");
}

TEST_P(StoreContractTest, ObjectOf64MiB) {
  const std::string data = randomBytes(64u << 20, 64);
  ASSERT_OK(sync().writeFull("big", data));
  auto st = sync().stat("big");
  ASSERT_OK(st);
  EXPECT_EQ(st->size, data.size());
  auto whole = sync().read("big");
  ASSERT_OK(whole);
  EXPECT_TRUE(*whole == data) << "64 MiB read back differs";
  auto range = sync().read("big", (32u << 20) + 7, 4u << 20);
  ASSERT_OK(range);
  EXPECT_TRUE(*range == data.substr((32u << 20) + 7, 4u << 20));
}

TEST_P(StoreContractTest, ListObjectsInPages) {
  std::set<std::string> written;
  for (int i = 0; i < 25; ++i) {
    std::string name = "listed." + std::to_string(i);
    ASSERT_OK(sync().writeFull(name, "x"));
    written.insert(name);
  }
  std::set<std::string> seen;
  std::string cursor;
  int pages = 0;
  for (;;) {
    auto page = sync().listObjects(cursor, 7);
    ASSERT_OK(page);
    ++pages;
    for (auto& n : page->names) EXPECT_TRUE(seen.insert(n).second) << "listed twice: " << n;
    if (!page->more) break;
    cursor = page->nextCursor;
    ASSERT_LT(pages, 100) << "listing does not end";
  }
  EXPECT_EQ(seen, written);
  EXPECT_GE(pages, 4);
}

TEST_P(StoreContractTest, OmapListOf100000KeysInPages) {
  constexpr int kKeys = 100000;
  constexpr int kPerOp = 2000;  // keys per write, to keep the set-up quick
  auto keyName = [](int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "entry.%07d", i);
    return std::string(buf);
  };
  for (int first = 0; first < kKeys; first += kPerOp) {
    WriteOp op;
    for (int i = first; i < first + kPerOp; ++i) op.omapSet(keyName(i), std::to_string(i));
    ASSERT_OK(sync().mutate("bigdir", std::move(op)));
  }
  ASSERT_OK(sync().mutate("bigdir", std::move(WriteOp().omapSet("other", "x"))));
  int next = 0, pages = 0;
  OmapListArgs args{"entry.", "", 1000};
  for (;;) {
    auto page = sync().omapList("bigdir", args);
    ASSERT_OK(page);
    ++pages;
    for (auto& [k, v] : page->entries) {
      ASSERT_EQ(k, keyName(next)) << "page " << pages;
      ASSERT_EQ(v, std::to_string(next));
      ++next;
    }
    if (!page->more) break;
    ASSERT_FALSE(page->entries.empty());
    args.startAfter = page->entries.back().first;
  }
  EXPECT_EQ(next, kKeys);
  EXPECT_GE(pages, kKeys / 1000);
}

TEST_P(StoreContractTest, ThirtyTwoThreadsOfMixedOperations) {
  constexpr int kThreads = 32, kRounds = 20;
  ASSERT_OK(sync().mutate("counter", std::move(WriteOp().setXattr("n", "0"))));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      backends::SyncStore s(store());
      const std::string own = "thread." + std::to_string(t);
      for (int round = 0; round < kRounds; ++round) {
        const std::string data = randomBytes(1000 + 97 * round + t, t * 1000 + round);
        auto w = s.writeFull(own, data);
        auto r = s.read(own);
        if (!w || !r || *r != data) ++failures;
        auto o = s.mutate("shared", std::move(WriteOp().omapSet(own + "." + std::to_string(round),
                                                                std::to_string(round))));
        if (!o) ++failures;
        // Compare-and-swap increment: retried until this thread's guard holds.
        for (;;) {
          auto cur = s.getXattr("counter", "n");
          if (!cur) {
            ++failures;
            break;
          }
          auto next = std::to_string(std::stoi(*cur) + 1);
          auto cas =
              s.mutate("counter", std::move(WriteOp().xattrEquals("n", *cur).setXattr("n", next)));
          if (cas) break;
          if (cas.error().code() != StatusCode::kPreconditionFailed) {
            ++failures;
            break;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto n = sync().getXattr("counter", "n");
  ASSERT_OK(n);
  EXPECT_EQ(*n, std::to_string(kThreads * kRounds)) << "a guarded increment was lost";
  int keys = 0;
  OmapListArgs args{"", "", 1000};
  for (;;) {
    auto page = sync().omapList("shared", args);
    ASSERT_OK(page);
    keys += static_cast<int>(page->entries.size());
    if (!page->more) break;
    args.startAfter = page->entries.back().first;
  }
  EXPECT_EQ(keys, kThreads * kRounds);
}

TEST_P(StoreContractTest, UsageReportsCapacityAndCountsTheObjectsWritten) {
  const Duration settles = GetParam().usageSettles;
  const auto giveUp = Clock::now() + settles;
  // Polls usage() until `done` holds or the store's settling time is over; the last answer.
  auto usageWhen = [&](auto done) {
    for (;;) {
      auto u = sync().usage();
      if ((u && done(*u)) || Clock::now() >= giveUp) return u;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  };
  auto before = usageWhen([](const backends::StoreUsage&) { return true; });
  ASSERT_OK(before);
  EXPECT_GT(before->totalBytes, 0u);
  EXPECT_GE(before->totalBytes, before->availBytes);
  EXPECT_GE(before->totalBytes, before->usedBytes);

  constexpr int kObjects = 12;
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_OK(sync().writeFull("usage." + std::to_string(i), std::string(1000, 'u')));
  }
  if (settles == Duration::zero()) {
    // Exact at once: a fresh store holds nothing else, overwrites and new xattrs or omap keys
    // add no object, and a remove takes one away.
    EXPECT_EQ(before->objects, 0u);
    auto after = sync().usage();
    ASSERT_OK(after);
    EXPECT_EQ(after->objects, before->objects + kObjects);
    ASSERT_OK(sync().writeFull("usage.1", "again"));
    ASSERT_OK(sync().mutate("usage.2", std::move(WriteOp().setXattr("a", "b").omapSet("k", "v"))));
    ASSERT_OK(sync().mutate("omap-only", std::move(WriteOp().omapSet("k", "v"))));
    ASSERT_OK(sync().remove("usage.0"));
    EXPECT_CODE(sync().createExclusive("usage.3", "x"), StatusCode::kAlreadyExists);
    after = sync().usage();
    ASSERT_OK(after);
    EXPECT_EQ(after->objects, before->objects + kObjects);  // +1 omap-only, -1 usage.0
    return;
  }
  // RADOS: the count is the whole pool's, taken from the placement-group statistics that the
  // OSD reports to ceph-mgr and the mgr digests for the monitor, each every mgr_stats_period /
  // mon_mgr_digest_period (1 s on the test cluster; 5 s by default). Right after the writes it
  // still shows the old count, so wait for it to catch up. It may exceed before + kObjects:
  // other tests write to the same pool in their own namespaces at the same time.
  auto after = usageWhen(
      [&](const backends::StoreUsage& u) { return u.objects >= before->objects + kObjects; });
  ASSERT_OK(after);
  EXPECT_GE(after->objects, before->objects + kObjects)
      << "the pool's object count did not catch up within "
      << std::chrono::duration_cast<std::chrono::seconds>(settles).count() << " s";
  EXPECT_GT(after->totalBytes, 0u);
  EXPECT_GE(after->totalBytes, after->availBytes);
}

TEST_P(StoreContractTest, DeadlineFiresWhenAnOperationHangs) {
  ASSERT_OK(sync().writeFull("obj", "data"));
  backends::FaultyStore faulty(store(), 42);
  faulty.addRule(FaultRule{.op = FaultOp::kRead, .action = FaultAction::kHang});
  backends::SyncStore s(faulty);
  auto start = Clock::now();
  auto r = s.read("obj", 0, kToEnd, Deadline::after(std::chrono::milliseconds(300)));
  auto waited = Clock::now() - start;
  EXPECT_CODE(r, StatusCode::kTimedOut);
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_LT(waited, std::chrono::seconds(3));
  EXPECT_EQ(faulty.hungCalls(), 1u);
  // Other operations are not held up by the hung one.
  auto st = s.stat("obj", Deadline::after(std::chrono::seconds(10)));
  EXPECT_OK(st);
  // The released call reaches the store; its late answer goes nowhere.
  faulty.releaseHung();
  EXPECT_OK(sync().read("obj"));
}

}  // namespace
}  // namespace tierfs::testing
