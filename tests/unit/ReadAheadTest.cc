// Sequential read-ahead: the stream detector on its own (ReadAheadStream), then through a
// Filesystem over a counting store, where the reads that reach the back end are visible.

#include <algorithm>
#include <random>

#include "fs/ReadAhead.h"
#include "tests/unit/FilesystemFixture.h"

namespace tierfs::testing {
namespace {

using fs::ByteRange;
using fs::ReadAheadOptions;
using fs::ReadAheadStream;

constexpr std::uint64_t kMiB = 1 << 20;
const ReadAheadOptions kOptions{.chunkSize = 4 * kMiB, .maxWindow = 32 * kMiB, .budget = 0};

TEST(ReadAheadStream, AReadAtTheStartFetchesTheNextChunk) {
  ReadAheadStream s;
  ByteRange r = s.onRead(0, kMiB, 100 * kMiB, kOptions);
  EXPECT_EQ(r.begin, 4 * kMiB);
  EXPECT_EQ(r.end, 8 * kMiB);
}

TEST(ReadAheadStream, TheWindowGrowsToItsMaximumAndTheRangesFollowEachOther) {
  ReadAheadStream s;
  std::uint64_t fetched = 0, furthestAhead = 0;
  for (std::uint64_t off = 0; off < 200 * kMiB; off += kMiB) {
    ByteRange r = s.onRead(off, kMiB, 400 * kMiB, kOptions);
    if (r.empty()) continue;
    if (fetched != 0) {
      EXPECT_EQ(r.begin, fetched) << "at " << off;  // no gap, no refetch
    }
    EXPECT_EQ(r.begin % kOptions.chunkSize, 0u);
    EXPECT_EQ(r.end % kOptions.chunkSize, 0u);
    fetched = r.end;
    furthestAhead = std::max(furthestAhead, r.end - (off + kMiB));
  }
  // The window reached its maximum (within the rounding to chunks) and never passed it.
  EXPECT_GE(furthestAhead, kOptions.maxWindow - kOptions.chunkSize);
  EXPECT_LE(furthestAhead, kOptions.maxWindow + kOptions.chunkSize);
}

TEST(ReadAheadStream, ReadsAnsweredOutOfOrderKeepTheStream) {
  ReadAheadStream s;
  std::uint64_t ahead = 0;
  for (std::uint64_t off : {0, 2, 1, 3, 5, 4, 6, 8, 7}) {
    ByteRange r = s.onRead(off * kMiB, kMiB, 100 * kMiB, kOptions);
    if (!r.empty()) ahead = r.end;
  }
  EXPECT_GE(ahead, 9 * kMiB + 8 * kMiB);  // the window kept growing
}

TEST(ReadAheadStream, ASeekEndsTheStreamAndAReadingFromThereStartsANewOne) {
  ReadAheadStream s;
  for (std::uint64_t off = 0; off < 16 * kMiB; off += kMiB)
    s.onRead(off, kMiB, 400 * kMiB, kOptions);
  EXPECT_TRUE(s.onRead(300 * kMiB, kMiB, 400 * kMiB, kOptions).empty());
  // Going on sequentially from the new place is a stream again, starting small.
  ByteRange r = s.onRead(301 * kMiB, kMiB, 400 * kMiB, kOptions);
  EXPECT_FALSE(r.empty());
  EXPECT_LE(r.end - r.begin, 2 * kOptions.chunkSize);
}

TEST(ReadAheadStream, ARandomReaderNeverReadsAhead) {
  ReadAheadStream s;
  std::mt19937_64 rnd(7);
  for (int i = 0; i < 1000; ++i) {
    std::uint64_t off = (rnd() % 1000 + 1) * 64 * kMiB;  // never 0, never near the last
    EXPECT_TRUE(s.onRead(off, 128 << 10, 100000 * kMiB, kOptions).empty()) << "read " << i;
  }
}

TEST(ReadAheadStream, NothingBeyondTheEndOfTheFile) {
  ReadAheadStream s;
  const std::uint64_t size = 10 * kMiB;
  for (std::uint64_t off = 0; off < size; off += kMiB) {
    ByteRange r = s.onRead(off, kMiB, size, kOptions);
    EXPECT_LE(r.end, size);
  }
  EXPECT_TRUE(s.onRead(0, 110 << 10, 110 << 10, kOptions).empty());  // a small file: nothing
}

TEST(ReadAheadStream, ARangeNotFetchedIsAskedForAgain) {
  ReadAheadStream s;
  ByteRange first = s.onRead(0, kMiB, 100 * kMiB, kOptions);
  s.notFetched(first);
  ByteRange again = s.onRead(kMiB, kMiB, 100 * kMiB, kOptions);
  EXPECT_EQ(again.begin, first.begin);
}

TEST(ReadAheadOptions, FitToMemoryLeavesRoomForTheChunksFetchedAhead) {
  const ReadAheadOptions wide{.maxWindow = 128 * kMiB, .budget = 256 * kMiB};
  const ReadAheadOptions fitted = fitReadAheadToMemory(wide, 128 * kMiB);
  EXPECT_EQ(fitted.maxWindow, 32 * kMiB);
  EXPECT_EQ(fitted.budget, 64 * kMiB);
  const ReadAheadOptions defaults;  // what the default 128 MiB memory cache holds: unchanged
  const ReadAheadOptions same = fitReadAheadToMemory(defaults, 128 * kMiB);
  EXPECT_EQ(same.maxWindow, defaults.maxWindow);
  EXPECT_EQ(same.budget, defaults.budget);
}

// Through the Filesystem: a file of 64 chunks of 64 KiB, read by a node whose cache is cold.
class ReadAheadFsTest : public FilesystemTest {
 protected:
  static constexpr std::uint64_t kChunks = 64;

  void SetUp() override {
    FilesystemTest::SetUp();
    data_ = randomBytes(kChunks * kChunk, 3);
    auto ino = writeFile(fsA(), kRootIno, "big", data_);
    ASSERT_OK(ino);
    ino_ = *ino;
  }

  std::unique_ptr<FsNode> readerNode(std::uint64_t maxWindow, std::uint64_t budget) {
    fs::FsOptions options;
    options.readAhead.maxWindow = maxWindow;
    options.readAhead.budget = budget;
    auto node = startNode(options);
    EXPECT_OK(node->fs->lookup(kRootIno, "big"));  // the kernel knows the inode from a lookup
    return node;
  }

  // The highest piece of the file the store has been asked to read.
  std::uint32_t furthestPieceRead() {
    std::uint32_t furthest = 0;
    for (const auto& name : store_->counts().readObjects) {
      auto key = cache::ChunkKey::fromObjectName(name);
      if (key && key->ino == ino_) furthest = std::max(furthest, key->piece);
    }
    return furthest;
  }

  std::string data_;
  Ino ino_ = 0;
};

TEST_F(ReadAheadFsTest, ASequentialReaderFindsTheBackEndReadingAheadOfIt) {
  auto node = readerNode(8 * kChunk, 64 * kChunk);
  bool keep = false;
  auto file = node->fs->open(ino_, O_RDONLY, &keep);
  ASSERT_OK(file);
  store_->reset();
  constexpr std::uint64_t kRead = 16 << 10;
  for (std::uint64_t off = 0; off < 2 * kChunk; off += kRead) {  // the first two chunks
    auto got = node->fs->read(**file, off, kRead);
    ASSERT_OK(got);
    ASSERT_EQ(got->view(), std::string_view(data_).substr(off, kRead));
  }
  // Read-ahead runs on the store's threads: wait (bounded) for it to show.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (furthestPieceRead() < 4 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(furthestPieceRead(), 4u) << "the reader is in piece 1";
  EXPECT_LE(furthestPieceRead(), 1 + 8 + 1u) << "no further than the window";
  EXPECT_GT(node->fs->readAheadCounters().chunksFetched, 0u);
  // The rest of the file reads back right, and each chunk came from the store once.
  for (std::uint64_t off = 2 * kChunk; off < data_.size(); off += kRead) {
    auto got = node->fs->read(**file, off, kRead);
    ASSERT_OK(got);
    ASSERT_EQ(got->view(), std::string_view(data_).substr(off, kRead)) << "at " << off;
  }
  EXPECT_OK(node->fs->release(std::move(*file)));
  auto reads = store_->counts().readObjects;
  std::sort(reads.begin(), reads.end());
  EXPECT_EQ(std::adjacent_find(reads.begin(), reads.end()), reads.end()) << "a chunk read twice";
}

TEST_F(ReadAheadFsTest, ARandomReaderCausesNoReadAhead) {
  auto node = readerNode(8 * kChunk, 64 * kChunk);
  store_->reset();
  std::mt19937_64 rnd(11);
  std::set<std::uint64_t> chunksTouched;
  for (int i = 0; i < 40; ++i) {
    const std::uint64_t off = (rnd() % (kChunks - 1) + 1) * kChunk + 100;  // never at 0
    auto got = node->fs->readInode(ino_, off, 4096);
    ASSERT_OK(got);
    ASSERT_EQ(got->view(), std::string_view(data_).substr(off, 4096));
    chunksTouched.insert(off / kChunk);
  }
  EXPECT_EQ(node->fs->readAheadCounters().chunksFetched, 0u);
  EXPECT_EQ(store_->counts().reads, chunksTouched.size()) << "only what was asked for";
}

TEST_F(ReadAheadFsTest, ReadAheadStaysWithinItsBudget) {
  auto node = readerNode(8 * kChunk, kChunk / 2);  // not even one chunk may be in flight
  for (std::uint64_t off = 0; off < 4 * kChunk; off += 16 << 10) {
    ASSERT_OK(node->fs->readInode(ino_, off, 16 << 10));
  }
  auto counters = node->fs->readAheadCounters();
  EXPECT_EQ(counters.chunksFetched, 0u);
  EXPECT_GT(counters.bytesOverBudget, 0u);
}

}  // namespace
}  // namespace tierfs::testing
