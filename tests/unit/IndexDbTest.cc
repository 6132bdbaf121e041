#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cache/IndexDb.h"
#include "common/Encoding.h"
#include "common/Endian.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"

namespace tierfs::cache {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr std::uint32_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

// A region of `n` entries with values of the magnitudes a cache holds: inodes up to 2^40,
// versions that look like microsecond clocks, entries packed one after another.
RegionRecord makeRecord(std::uint32_t region, std::uint64_t sealSeq, std::size_t n,
                        std::mt19937_64& rng) {
  RegionRecord r;
  r.region = region;
  r.sealSeq = sealSeq;
  std::uint32_t offset = 0;
  for (std::size_t i = 0; i < n; ++i) {
    EntryRecord e;
    e.key.ino = 1 + rng() % (std::uint64_t{1} << 40);
    e.key.version = 1'700'000'000'000'000ull + rng() % 1'000'000'000'000ull;
    e.key.piece = static_cast<std::uint32_t>(rng() % 4096);
    e.offset = offset;
    e.length = 4096 + static_cast<std::uint32_t>(rng() % (128 << 10));
    e.checksum = rng();
    offset += 64 + e.length;
    r.entries.push_back(e);
  }
  return r;
}

// Expects Corruption naming record `region` and containing `needle`.
template <typename T>
void expectCorrupt(const Result<T>& r, std::uint32_t region, std::string_view needle) {
  ASSERT_FALSE(r) << "accepted; wanted '" << needle << "'";
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption) << r.error().toString();
  const std::string& msg = r.error().message();
  EXPECT_NE(msg.find(fmt::format("cache region record {}", region)), std::string::npos) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
}

// ---- The record encoding ----

TEST(RegionRecordTest, RoundTripsRecordsOfZeroOneAndAThousandEntries) {
  std::mt19937_64 rng(1);
  for (std::size_t n : {0, 1, 1000}) {
    const RegionRecord r = makeRecord(17, 123456789, n, rng);
    const std::string bytes = encodeRegionRecord(r);
    auto back = decodeRegionRecord(17, bytes);
    ASSERT_OK(back);
    EXPECT_EQ(*back, r) << n << " entries";
    EXPECT_EQ(back->entries.size(), n);
  }
}

TEST(RegionRecordTest, RoundTripsExtremeValues) {
  RegionRecord r;
  r.region = kMaxU32;
  r.sealSeq = kMaxU64;
  r.entries.push_back({{kMaxU64, kMaxU64, kMaxU32}, kMaxU32, 0, kMaxU64});
  r.entries.push_back({{0, 0, 0}, 0, kMaxU32, 0});
  r.entries.push_back({{1, 2, 3}, kMaxU32 - 10, 10, 0x0102030405060708ull});
  auto back = decodeRegionRecord(kMaxU32, encodeRegionRecord(r));
  ASSERT_OK(back);
  EXPECT_EQ(*back, r);
}

TEST(RegionRecordTest, TheRegionComesFromTheArgument) {
  std::mt19937_64 rng(2);
  const RegionRecord r = makeRecord(5, 1, 3, rng);
  auto back = decodeRegionRecord(9, encodeRegionRecord(r));
  ASSERT_OK(back);
  EXPECT_EQ(back->region, 9u);
  EXPECT_EQ(back->entries, r.entries);
}

TEST(RegionRecordTest, LayoutIsVersionSealSeqCountThenEntries) {
  RegionRecord r;
  r.sealSeq = 300;
  r.entries.push_back({{1, 2, 3}, 4, 5, 0x0807060504030201ull});
  EXPECT_EQ(encodeRegionRecord(r), std::string("\x01"
                                               "\xac\x02"
                                               "\x01"
                                               "\x01\x02\x03\x04\x05"
                                               "\x01\x02\x03\x04\x05\x06\x07\x08",
                                               17));
}

TEST(RegionRecordTest, EveryTruncationIsCorruption) {
  std::mt19937_64 rng(3);
  const std::string bytes = encodeRegionRecord(makeRecord(7, 99999, 3, rng));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE(n);
    expectCorrupt(decodeRegionRecord(7, std::string_view(bytes).substr(0, n)), 7, "field '");
  }
  expectCorrupt(decodeRegionRecord(7, ""), 7, "field 'version': truncated");
}

TEST(RegionRecordTest, UnknownVersionIsCorruption) {
  std::mt19937_64 rng(4);
  const std::string valid = encodeRegionRecord(makeRecord(8, 1, 2, rng));
  for (char version : {'\x00', '\x02', '\xff'}) {
    std::string bytes = valid;
    bytes[0] = version;
    expectCorrupt(decodeRegionRecord(8, bytes), 8, "field 'version': unknown record version");
  }
}

TEST(RegionRecordTest, TrailingBytesAreCorruption) {
  std::mt19937_64 rng(5);
  for (std::size_t n : {0, 2}) {
    const std::string bytes = encodeRegionRecord(makeRecord(11, 1, n, rng)) + "x";
    expectCorrupt(decodeRegionRecord(11, bytes), 11, "1 unexpected bytes after the last field");
  }
}

TEST(RegionRecordTest, EntryEndingPastTwoToThe32IsCorruption) {
  RegionRecord r;
  r.entries.push_back({{1, 1, 0}, kMaxU32 - 10, 10, 0});
  ASSERT_OK(decodeRegionRecord(3, encodeRegionRecord(r)));
  r.entries.push_back({{1, 1, 1}, kMaxU32 - 10, 11, 0});
  expectCorrupt(decodeRegionRecord(3, encodeRegionRecord(r)), 3, "entry 1 at offset");
  r.entries.back() = {{1, 1, 1}, kMaxU32, kMaxU32, 0};
  expectCorrupt(decodeRegionRecord(3, encodeRegionRecord(r)), 3, "ends past 2^32");
}

TEST(RegionRecordTest, EntryCountLargerThanTheBytesIsCorruption) {
  std::mt19937_64 rng(6);
  std::string bytes = encodeRegionRecord(makeRecord(4, 1, 2, rng));
  // Byte 2 is the count (the sealSeq 1 takes one byte).
  ASSERT_EQ(bytes[2], '\x02');
  // One entry more than there are: the bytes run out in the third entry.
  bytes[2] = '\x03';
  expectCorrupt(decodeRegionRecord(4, bytes), 4, "field 'entry ino': truncated");
  // More entries than the bytes could hold at 13 bytes each is refused from the count alone.
  bytes[2] = '\x64';
  expectCorrupt(decodeRegionRecord(4, bytes), 4, "field 'entry count'");
  // As is a count no input could hold, before anything is allocated for it.
  for (std::uint64_t count : {std::uint64_t{1} << 40, kMaxU64}) {
    Encoder e;
    e.putU8(1);
    e.putVarint(1);
    e.putVarint(count);
    e.putRaw(std::string(100, '\x01'));
    expectCorrupt(decodeRegionRecord(4, e.bytes()), 4, "field 'entry count'");
  }
}

// Mutated encodings never crash the decoder, and either decode to a record that encodes back to
// exactly the mutated bytes (the encoding has one spelling per record) or are Corruption naming
// the region.
TEST(RegionRecordTest, RandomMutationsDecodeCanonicallyOrAreCorruption) {
  std::mt19937_64 rng(7);
  int accepted = 0;
  int rejected = 0;
  constexpr int kIterations = 5000;
  for (int i = 0; i < kIterations; ++i) {
    const RegionRecord original = makeRecord(42, rng() >> (rng() % 64), rng() % 12, rng);
    std::string bytes = encodeRegionRecord(original);
    const int mutations = 1 + static_cast<int>(rng() % 3);
    for (int m = 0; m < mutations; ++m) {
      const std::size_t at = bytes.empty() ? 0 : rng() % bytes.size();
      switch (rng() % 6) {
        case 0:  // flip a bit
          if (!bytes.empty()) bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
          break;
        case 1:  // replace a byte
          if (!bytes.empty()) bytes[at] = static_cast<char>(rng());
          break;
        case 2:  // insert a byte
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng()));
          break;
        case 3:  // delete a byte
          if (!bytes.empty()) bytes.erase(at, 1);
          break;
        case 4:  // cut
          bytes.resize(at);
          break;
        case 5:  // a run of continuation bytes (an overlong or huge varint)
          bytes.insert(at, std::string(1 + rng() % 12, '\xff'));
          break;
      }
    }
    auto r = decodeRegionRecord(42, bytes);
    if (r) {
      ++accepted;
      ASSERT_EQ(r->region, 42u);
      ASSERT_EQ(encodeRegionRecord(*r), bytes) << "iteration " << i;
      for (const EntryRecord& e : r->entries) {
        ASSERT_LE(std::uint64_t{e.offset} + e.length, kMaxU32);
      }
    } else {
      ++rejected;
      ASSERT_EQ(r.error().code(), StatusCode::kCorruption) << r.error().toString();
      ASSERT_NE(r.error().message().find("cache region record 42"), std::string::npos)
          << r.error().message();
    }
  }
  // Both outcomes happen often (a mutated checksum byte still decodes): the test exercised both.
  EXPECT_GT(accepted, kIterations / 20);
  EXPECT_GT(rejected, kIterations / 2);
}

// ---- The database ----

class IndexDbTest : public ::testing::Test {
 protected:
  // The database's own directory does not exist yet: open() creates it.
  std::string dbDir() const { return (temp_.path() / "cache" / "index").string(); }

  std::unique_ptr<IndexDb> open(const std::string& identity = "volume-a",
                                bool* wiped = nullptr) const {
    return openAt(dbDir(), identity, wiped);
  }
  static std::unique_ptr<IndexDb> openAt(const std::string& dir, const std::string& identity,
                                         bool* wiped = nullptr) {
    auto db = IndexDb::open(dir, identity, wiped);
    if (!db) {
      ADD_FAILURE() << db.error().toString();
      return nullptr;
    }
    return std::move(*db);
  }

  struct Seen {
    RegionRecord record;
    std::int64_t accessTime;
  };
  static std::vector<Seen> all(const IndexDb& db) {
    std::vector<Seen> out;
    Status s = db.forEachRegion([&](const RegionRecord& r, std::int64_t t) {
      out.push_back({r, t});
      return Status::ok();
    });
    EXPECT_OK(s);
    return out;
  }
  static std::vector<std::uint32_t> regions(const IndexDb& db) {
    std::vector<std::uint32_t> out;
    for (const Seen& s : all(db)) out.push_back(s.record.region);
    return out;
  }

  TempDir temp_{TempDir::memoryBase()};
  std::mt19937_64 rng_{11};
};

TEST_F(IndexDbTest, ANewDatabaseIsCreatedPrivateAndNotWiped) {
  bool wiped = true;
  auto db = open("volume-a", &wiped);
  ASSERT_TRUE(db);
  EXPECT_FALSE(wiped);
  struct stat st {};
  ASSERT_EQ(::stat(dbDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(all(*db).empty());
}

// Whatever the umask, and a directory left open (by hand, by an older tierfs) is closed.
TEST_F(IndexDbTest, TheDirectoryIsPrivateWhateverTheUmaskAndAnOpenOneIsClosed) {
  const mode_t old = ::umask(0);
  auto db = open("volume-a");
  ::umask(old);
  ASSERT_TRUE(db);
  struct stat st {};
  ASSERT_EQ(::stat(dbDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  db.reset();
  ASSERT_EQ(::chmod(dbDir().c_str(), 0755), 0);
  auto again = open("volume-a");
  ASSERT_TRUE(again);
  ASSERT_EQ(::stat(dbDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(IndexDbTest, RecordsComeBackInRegionOrder) {
  auto db = open();
  ASSERT_TRUE(db);
  // Numbers whose little-endian or decimal order differs from their numeric order.
  const std::vector<std::uint32_t> put = {300, 2, 70000, 256, 1, 255, kMaxU32, 0};
  std::map<std::uint32_t, RegionRecord> expected;
  for (std::uint32_t region : put) {
    RegionRecord r = makeRecord(region, region + 1000, 1 + region % 5, rng_);
    ASSERT_OK(db->putRegion(r));
    expected[region] = r;
  }
  const std::vector<Seen> seen = all(*db);
  ASSERT_EQ(seen.size(), expected.size());
  auto want = expected.begin();
  for (const Seen& s : seen) {
    EXPECT_EQ(s.record, want->second);
    EXPECT_EQ(s.accessTime, 0);
    ++want;
  }
}

TEST_F(IndexDbTest, PutReplacesAndDropRemoves) {
  auto db = open();
  ASSERT_TRUE(db);
  for (std::uint32_t region : {1, 2, 3}) ASSERT_OK(db->putRegion(makeRecord(region, 1, 4, rng_)));
  const RegionRecord newer = makeRecord(2, 50, 7, rng_);
  ASSERT_OK(db->putRegion(newer));
  ASSERT_OK(db->dropRegion(3));
  ASSERT_OK(db->dropRegion(99));  // never written: nothing to do
  const std::vector<Seen> seen = all(*db);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].record.region, 1u);
  EXPECT_EQ(seen[1].record, newer);
  ASSERT_OK(db->dropRegion(1));
  ASSERT_OK(db->dropRegion(2));
  EXPECT_TRUE(all(*db).empty());
}

TEST_F(IndexDbTest, GetRegionReadsOneRecord) {
  auto db = open();
  ASSERT_TRUE(db);
  const RegionRecord one = makeRecord(1, 10, 3, rng_);
  const RegionRecord big = makeRecord(70000, 11, 150, rng_);
  ASSERT_OK(db->putRegion(one));
  ASSERT_OK(db->putRegion(big));
  auto got = db->getRegion(70000);
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, big);
  got = db->getRegion(1);
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, one);
  for (std::uint32_t absent : {0u, 2u, 256u, 69999u, kMaxU32}) {
    got = db->getRegion(absent);
    ASSERT_OK(got);
    EXPECT_FALSE(got->has_value()) << absent;
  }
  ASSERT_OK(db->dropRegion(1));
  got = db->getRegion(1);
  ASSERT_OK(got);
  EXPECT_FALSE(got->has_value());
}

TEST_F(IndexDbTest, AccessTimesRoundTripAndDefaultToZero) {
  auto db = open();
  ASSERT_TRUE(db);
  for (std::uint32_t region : {1, 2, 3, 5}) {
    ASSERT_OK(db->putRegion(makeRecord(region, region, 2, rng_)));
  }
  // Region 4 has no record: its time is not reported and does not shift the others'.
  ASSERT_OK(db->putAccessTimes({{1, 1'700'000'000}, {3, -5}, {4, 77}, {5, 1}}));
  ASSERT_OK(db->putAccessTimes({{5, std::numeric_limits<std::int64_t>::max()}}));
  ASSERT_OK(db->putAccessTimes({}));
  std::vector<Seen> seen = all(*db);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].accessTime, 1'700'000'000);
  EXPECT_EQ(seen[1].accessTime, 0);
  EXPECT_EQ(seen[2].accessTime, -5);
  EXPECT_EQ(seen[3].record.region, 5u);
  EXPECT_EQ(seen[3].accessTime, std::numeric_limits<std::int64_t>::max());

  // A region's new content starts without an access time, as does one dropped and put again.
  ASSERT_OK(db->putRegion(makeRecord(1, 10, 2, rng_)));
  ASSERT_OK(db->dropRegion(3));
  ASSERT_OK(db->putRegion(makeRecord(3, 11, 2, rng_)));
  seen = all(*db);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].accessTime, 0);
  EXPECT_EQ(seen[2].accessTime, 0);
  EXPECT_EQ(seen[3].accessTime, std::numeric_limits<std::int64_t>::max());
}

TEST_F(IndexDbTest, ReopenKeepsRecordsAndAccessTimes) {
  std::vector<Seen> before;
  {
    auto db = open();
    ASSERT_TRUE(db);
    for (std::uint32_t region = 0; region < 20; ++region) {
      ASSERT_OK(db->putRegion(makeRecord(region, region * 3, region, rng_)));
    }
    ASSERT_OK(db->dropRegion(7));
    ASSERT_OK(db->putAccessTimes({{3, 1000}, {19, 2000}}));
    before = all(*db);
    ASSERT_EQ(before.size(), 19u);
  }
  bool wiped = true;
  auto db = open("volume-a", &wiped);
  ASSERT_TRUE(db);
  EXPECT_FALSE(wiped);
  const std::vector<Seen> after = all(*db);
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].record, before[i].record);
    EXPECT_EQ(after[i].accessTime, before[i].accessTime);
  }
  EXPECT_EQ(after[3].accessTime, 1000);
}

// kill -9 without a clean close: the database's files as they are while it is open (copied
// then) must recover every synced record from the write-ahead log.
TEST_F(IndexDbTest, SyncedRecordsSurviveACrash) {
  const std::string crashed = (temp_.path() / "crashed").string();
  std::vector<RegionRecord> written;
  auto db = open();
  ASSERT_TRUE(db);
  for (std::uint32_t region = 0; region < 10; ++region) {
    written.push_back(makeRecord(region, region, 20, rng_));
    ASSERT_OK(db->putRegion(written.back()));
  }
  ASSERT_OK(db->dropRegion(4));
  written.erase(written.begin() + 4);
  fs::copy(dbDir(), crashed, fs::copy_options::recursive);
  db.reset();

  // Nothing was flushed: the records are only in the log, so the reopen recovers them from it.
  bool haveLog = false;
  for (const auto& entry : fs::directory_iterator(crashed)) {
    EXPECT_NE(entry.path().extension(), ".sst") << entry.path();
    if (entry.path().extension() == ".log" && entry.file_size() > 0) haveLog = true;
  }
  EXPECT_TRUE(haveLog);

  bool wiped = true;
  auto recovered = openAt(crashed, "volume-a", &wiped);
  ASSERT_TRUE(recovered);
  EXPECT_FALSE(wiped);
  const std::vector<Seen> seen = all(*recovered);
  ASSERT_EQ(seen.size(), written.size());
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].record, written[i]);
}

TEST_F(IndexDbTest, ADifferentIdentityWipesAndTheSameDoesNot) {
  {
    auto db = open("volume-a");
    ASSERT_TRUE(db);
    for (std::uint32_t region = 0; region < 5; ++region) {
      ASSERT_OK(db->putRegion(makeRecord(region, region, 3, rng_)));
    }
    ASSERT_OK(db->putAccessTimes({{1, 100}}));
  }
  bool wiped = false;
  {
    auto db = open("volume-a", &wiped);
    ASSERT_TRUE(db);
    EXPECT_FALSE(wiped);
    EXPECT_EQ(regions(*db).size(), 5u);
  }
  {
    auto db = open("volume-b", &wiped);
    ASSERT_TRUE(db);
    EXPECT_TRUE(wiped);
    EXPECT_TRUE(all(*db).empty());
    // A record put now must not inherit the old region 1's access time.
    ASSERT_OK(db->putRegion(makeRecord(1, 9, 1, rng_)));
  }
  {
    auto db = open("volume-b", &wiped);
    ASSERT_TRUE(db);
    EXPECT_FALSE(wiped);
    const std::vector<Seen> seen = all(*db);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].record.sealSeq, 9u);
    EXPECT_EQ(seen[0].accessTime, 0);
  }
  // An identity that only extends the other is still another one.
  auto db = open("volume-b2", &wiped);
  ASSERT_TRUE(db);
  EXPECT_TRUE(wiped);
  EXPECT_TRUE(all(*db).empty());
}

TEST_F(IndexDbTest, AWipeGivesBackTheSpace) {
  std::uint64_t full = 0;
  {
    auto db = open("volume-a");
    ASSERT_TRUE(db);
    for (std::uint32_t region = 0; region < 400; ++region) {
      ASSERT_OK(db->putRegion(makeRecord(region, region, 150, rng_)));
    }
    auto bytes = db->diskBytes();
    ASSERT_OK(bytes);
    full = *bytes;
  }
  // 400 records of 150 entries are about 1.8 MB.
  EXPECT_GT(full, 1'500'000u);
  bool wiped = false;
  auto db = open("volume-b", &wiped);
  ASSERT_TRUE(db);
  EXPECT_TRUE(wiped);
  auto bytes = db->diskBytes();
  ASSERT_OK(bytes);
  std::printf("index of 400 regions: %llu bytes; after the wipe: %llu bytes\n",
              static_cast<unsigned long long>(full), static_cast<unsigned long long>(*bytes));
  EXPECT_LT(*bytes, full / 4);
}

TEST_F(IndexDbTest, AnErrorFromTheCallbackStopsTheWalk) {
  auto db = open();
  ASSERT_TRUE(db);
  for (std::uint32_t region = 0; region < 6; ++region) {
    ASSERT_OK(db->putRegion(makeRecord(region, region, 1, rng_)));
  }
  std::vector<std::uint32_t> visited;
  Status s = db->forEachRegion([&](const RegionRecord& r, std::int64_t) {
    visited.push_back(r.region);
    return r.region == 2 ? Status::noSpace("stop here") : Status::ok();
  });
  EXPECT_EQ(s, Status::noSpace("stop here"));
  EXPECT_EQ(visited, (std::vector<std::uint32_t>{0, 1, 2}));
}

// The walk reads one snapshot: a callback that drops each region as it goes still sees them all.
TEST_F(IndexDbTest, TheCallbackMayWrite) {
  auto db = open();
  ASSERT_TRUE(db);
  for (std::uint32_t region = 0; region < 6; ++region) {
    ASSERT_OK(db->putRegion(makeRecord(region, region, 1, rng_)));
  }
  ASSERT_OK(db->putAccessTimes({{5, 55}}));
  std::vector<std::pair<std::uint32_t, std::int64_t>> visited;
  ASSERT_OK(db->forEachRegion([&](const RegionRecord& r, std::int64_t t) {
    visited.emplace_back(r.region, t);
    return db->dropRegion(r.region == 0 ? 5 : r.region);
  }));
  ASSERT_EQ(visited.size(), 6u);
  EXPECT_EQ(visited.back(), std::make_pair(std::uint32_t{5}, std::int64_t{55}));
  EXPECT_EQ(regions(*db), std::vector<std::uint32_t>{0});
}

TEST_F(IndexDbTest, ARecordThatDoesNotDecodeIsCorruptionNamingTheRegion) {
  {
    auto db = open();
    ASSERT_TRUE(db);
    for (std::uint32_t region : {1, 2, 3}) {
      ASSERT_OK(db->putRegion(makeRecord(region, region, 2, rng_)));
    }
  }
  {
    // Damage region 2's record behind the IndexDb's back.
    rocksdb::DB* raw = nullptr;
    rocksdb::Options options;
    ASSERT_TRUE(rocksdb::DB::Open(options, dbDir(), &raw).ok());
    std::unique_ptr<rocksdb::DB> rdb(raw);
    std::string key = "r/";
    appendBigEndian32(key, 2);
    ASSERT_TRUE(rdb->Put(rocksdb::WriteOptions(), key, "\x01garbage").ok());
    ASSERT_TRUE(rdb->Close().ok());
  }
  auto db = open();
  ASSERT_TRUE(db);
  std::vector<std::uint32_t> visited;
  Status s = db->forEachRegion([&](const RegionRecord& r, std::int64_t) {
    visited.push_back(r.region);
    return Status::ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.toString();
  EXPECT_NE(s.message().find("cache region record 2"), std::string::npos) << s.message();
  EXPECT_EQ(visited, std::vector<std::uint32_t>{1});
  auto got = db->getRegion(2);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), StatusCode::kCorruption) << got.error().toString();
  EXPECT_NE(got.error().message().find("cache region record 2"), std::string::npos);
  ASSERT_OK(db->getRegion(3));
  // Dropping the damaged record repairs the walk.
  ASSERT_OK(db->dropRegion(2));
  EXPECT_EQ(regions(*db), (std::vector<std::uint32_t>{1, 3}));
}

TEST_F(IndexDbTest, ASecondOpenOfTheSameDirectoryIsRefused) {
  auto db = open();
  ASSERT_TRUE(db);
  auto second = IndexDb::open(dbDir(), "volume-a");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), StatusCode::kUnavailable) << second.error().toString();
  EXPECT_NE(second.error().message().find(dbDir()), std::string::npos);
}

TEST_F(IndexDbTest, DiskBytesCountsTheDatabaseFiles) {
  auto db = open();
  ASSERT_TRUE(db);
  auto empty = db->diskBytes();
  ASSERT_OK(empty);
  EXPECT_GT(*empty, 0u);  // the manifest, options and log files exist from the start
  for (std::uint32_t region = 0; region < 200; ++region) {
    ASSERT_OK(db->putRegion(makeRecord(region, region, 150, rng_)));
  }
  auto full = db->diskBytes();
  ASSERT_OK(full);
  // 200 records of 150 entries of about 31 bytes: about 0.9 MB, in the log or the tables.
  EXPECT_GT(*full, *empty + 900'000);
  // The files' sizes are what they occupy: no blocks allocated ahead of them (rounding each
  // file up to a block aside).
  std::uint64_t allocated = 0;
  std::uint64_t files = 0;
  for (const auto& entry : fs::directory_iterator(dbDir())) {
    struct stat st {};
    ASSERT_EQ(::stat(entry.path().c_str(), &st), 0);
    if (!S_ISREG(st.st_mode)) continue;
    allocated += static_cast<std::uint64_t>(st.st_blocks) * 512;
    ++files;
  }
  std::printf("diskBytes %llu, allocated %llu in %llu files\n",
              static_cast<unsigned long long>(*full), static_cast<unsigned long long>(allocated),
              static_cast<unsigned long long>(files));
  EXPECT_LE(allocated, *full + files * 4096);
}

// A long-running cache puts and drops regions forever; the database must hold about its live
// records, not its history. 5000 records of 150 entries pass through a cache of 256 regions.
//
// The bound, from the options IndexDb sets: the live records (256 x ~4.7 KB = 1.2 MB) in at most
// the few level-0 tables that wait for a compaction plus the compacted one (5 x 1.2 MB = 6 MB);
// the write-ahead log of the memtable being filled and of one being flushed (2 x 4 MiB); the info
// LOG (3 x 1 MiB at most, far less here) and a manifest under 1 MiB: about 18 MiB at the very
// worst. 20 MiB is below the 23 MB that pass through, so a database that kept its history
// (no flush, no compaction, logs kept) fails.
TEST_F(IndexDbTest, DiskBytesStayBoundedUnderChurn) {
  constexpr int kRecords = 5000;
  constexpr std::uint32_t kLiveRegions = 256;
  constexpr std::uint64_t kBound = 20 << 20;
  auto db = open();
  ASSERT_TRUE(db);
  std::map<std::uint32_t, RegionRecord> live;
  std::uint64_t written = 0;
  std::uint64_t peak = 0;
  for (int i = 0; i < kRecords; ++i) {
    const std::uint32_t region = static_cast<std::uint32_t>(i) % kLiveRegions;
    if (live.count(region)) {
      ASSERT_OK(db->dropRegion(region));
    }
    RegionRecord r = makeRecord(region, static_cast<std::uint64_t>(i), 150, rng_);
    written += encodeRegionRecord(r).size();
    ASSERT_OK(db->putRegion(r));
    live[region] = std::move(r);
    if (i % 10 == 9) {
      std::vector<std::pair<std::uint32_t, std::int64_t>> times;
      for (std::uint32_t k = 0; k < 10; ++k) times.emplace_back((region + k * 7) % kLiveRegions, i);
      ASSERT_OK(db->putAccessTimes(times));
    }
    if (i % 25 == 0 || i == kRecords - 1) {
      auto bytes = db->diskBytes();
      ASSERT_OK(bytes);
      peak = std::max(peak, *bytes);
    }
  }
  auto last = db->diskBytes();
  ASSERT_OK(last);
  std::printf("churn of %d records (%llu bytes encoded): diskBytes peak %llu, at the end %llu\n",
              kRecords, static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(peak), static_cast<unsigned long long>(*last));
  ASSERT_GT(written, kBound) << "the churn must write more than the bound for the test to mean "
                                "anything";
  EXPECT_LT(peak, kBound);

  // And the churned database still holds exactly the live records.
  db.reset();
  db = open();
  ASSERT_TRUE(db);
  const std::vector<Seen> seen = all(*db);
  ASSERT_EQ(seen.size(), live.size());
  auto want = live.begin();
  for (const Seen& s : seen) {
    EXPECT_EQ(s.record, want->second);
    ++want;
  }
}

}  // namespace
}  // namespace tierfs::cache
