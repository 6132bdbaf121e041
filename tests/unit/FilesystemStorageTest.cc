// fs::Filesystem and the store under it: chunks no file refers to any more are removed, and store
// errors reach the caller as errors, never as wrong bytes or lost commits.
#include <fcntl.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "tests/unit/FilesystemFixture.h"

namespace tierfs::testing {
namespace {

using backends::FaultAction;
using backends::FaultOp;
using backends::FaultRule;

class FilesystemGcTest : public FilesystemTest {
 protected:
  void SetUp() override {
    FilesystemTest::SetUp();
    a_.reset();
    a_ = startNode({.gcDelay = Duration::zero()});
  }
};

TEST_F(FilesystemGcTest, OverwrittenChunksAreRemoved) {
  auto ino = writeFile(fsA(), kRootIno, "f", randomBytes(8 * kChunk, 14));
  ASSERT_OK(ino);
  bool keep = false;
  auto file = fsA().open(*ino, O_WRONLY, &keep);
  ASSERT_OK(file);
  ASSERT_OK(fsA().write(**file, 2 * kChunk, randomBytes(2 * kChunk, 15)));  // whole chunks
  ASSERT_OK(fsA().write(**file, 6 * kChunk + 10, "partial"));               // part of one
  ASSERT_OK(fsA().release(std::move(*file)));
  ASSERT_OK(fsA().flushAll());
  auto attrs = fsA().getattr(*ino);
  ASSERT_OK(attrs);
  const auto referenced = referencedChunks(*attrs);
  EXPECT_EQ(referenced.size(), 9u);  // 8 - 2 replaced + 2 new + the 7-byte patch
  EXPECT_EQ(chunksSettleTo(*ino, referenced), referenced);

  // Truncation drops the chunks past the new end.
  ASSERT_OK(fsA().setattr(*ino, fs::SetAttr{.setSize = true, .size = kChunk + 1}));
  ASSERT_OK(fsA().flushAll());
  attrs = fsA().getattr(*ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(referencedChunks(*attrs).size(), 2u);
  EXPECT_EQ(chunksSettleTo(*ino, referencedChunks(*attrs)), referencedChunks(*attrs));
}

TEST_F(FilesystemGcTest, ChunksOfAnUnlinkedFileAreRemoved) {
  auto ino = writeFile(fsA(), kRootIno, "gone", randomBytes(3 * kChunk, 16));
  ASSERT_OK(ino);
  EXPECT_EQ(chunkObjects(*ino).size(), 3u);
  ASSERT_OK(fsA().unlink(kRootIno, "gone"));
  ASSERT_OK(fsA().flushAll());
  EXPECT_EQ(chunksSettleTo(*ino, {}), std::set<cache::ChunkKey>{});
}

TEST_F(FilesystemGcTest, AnUnlinkedOpenFileStaysReadableUntilItsLastClose) {
  const std::string data = randomBytes(3 * kChunk, 17);
  auto ino = writeFile(fsA(), kRootIno, "open", data);
  ASSERT_OK(ino);
  bool keep = false;
  auto reader = fsA().open(*ino, O_RDONLY, &keep);
  ASSERT_OK(reader);
  ASSERT_OK(fsA().unlink(kRootIno, "open"));
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "open")), ENOENT);
  ASSERT_OK(fsA().flushAll());
  // A cold cache (another node's) would have to read the chunks: they are all still there.
  EXPECT_EQ(chunkObjects(*ino).size(), 3u);
  auto back = fsA().read(**reader, 0, 1 << 20);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data);
  ASSERT_OK(fsA().release(std::move(*reader)));
  ASSERT_OK(fsA().flushAll());
  EXPECT_EQ(chunksSettleTo(*ino, {}), std::set<cache::ChunkKey>{});
}

TEST_F(FilesystemGcTest, AnUnlinkedFileStillBeingWrittenLeavesNoChunks) {
  auto created = fsA().create(kRootIno, "tmp", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, file] = *created;
  const std::string data = randomBytes(2 * kChunk, 18);
  ASSERT_OK(writeAll(fsA(), *file, 0, data));
  ASSERT_OK(fsA().flush(*file));
  ASSERT_OK(fsA().unlink(kRootIno, "tmp"));
  ASSERT_OK(writeAll(fsA(), *file, 2 * kChunk, data));  // written after the unlink
  auto back = fsA().read(*file, 0, 1 << 20);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data + data);
  ASSERT_OK(fsA().flush(*file));
  ASSERT_OK(fsA().release(std::move(file)));
  ASSERT_OK(fsA().flushAll());
  EXPECT_EQ(chunksSettleTo(inode.ino, {}), std::set<cache::ChunkKey>{});
}

// A failed upload fails the flush; the committed content stays as it was, the written bytes
// are kept (this node still reads them), and the next flush uploads and commits them.
TEST_F(FilesystemTest, FailedChunkWritesFailTheFlushAndLeaveTheCommittedContent) {
  const std::string data = randomBytes(2 * kChunk, 19);
  auto ino = writeFile(fsA(), kRootIno, "precious", data);
  ASSERT_OK(ino);
  faulty_->addRule(FaultRule{.op = FaultOp::kMutate, .oidPrefix = "c."});
  bool keep = false;
  auto file = fsA().open(*ino, O_RDWR, &keep);
  ASSERT_OK(file);
  const std::string written = randomBytes(2 * kChunk + 100, 20);
  ASSERT_OK(writeAll(fsA(), **file, 0, written));  // buffered: no error yet
  for (int attempt = 0; attempt < 2; ++attempt) {  // the bytes survive a failed retry too
    Status flushed = fsA().flush(**file);
    EXPECT_FALSE(flushed.isOk());
    EXPECT_EQ(errnoOf(flushed), EIO) << flushed.toString();
    EXPECT_EQ(errnoOf(fsA().fsync(**file)), EIO);
  }
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "precious");
  ASSERT_OK(found);
  auto cold = readFile(*other->fs, found->ino);
  ASSERT_OK(cold);
  EXPECT_TRUE(*cold == data);  // the committed content is untouched
  auto mine = fsA().read(**file, 0, 4 * kChunk);
  ASSERT_OK(mine);
  EXPECT_TRUE(mine->toString() == written);  // nothing written was dropped

  faulty_->clearRules();
  ASSERT_OK(fsA().fsync(**file));
  ASSERT_OK(fsA().release(std::move(*file)));
  auto after = readOnNewNode("precious");
  ASSERT_OK(after);
  EXPECT_TRUE(*after == written);
}

// A writer reads its own bytes while their uploads are in flight (the uploads and its reads
// share the buffers), and the uploads, once the store answers, commit the same bytes.
TEST_F(FilesystemTest, AWriterReadsItsBytesWhileTheirUploadsAreInFlight) {
  faulty_->addRule(
      FaultRule{.op = FaultOp::kMutate, .oidPrefix = "c.", .action = FaultAction::kHang});
  auto created = fsA().create(kRootIno, "inflight", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& file = *created->second;
  const std::string written = randomBytes(3 * kChunk + 100, 21);
  ASSERT_OK(writeAll(fsA(), file, 0, written));  // slots 0-2 are full: their uploads start
  for (int i = 0; i < 500 && faulty_->hungCalls() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(faulty_->hungCalls(), 3u) << "three chunk uploads should be held by the store";
  auto mine = fsA().read(file, 0, 4 * kChunk);
  ASSERT_OK(mine);
  EXPECT_TRUE(mine->toString() == written);
  auto middle = fsA().read(file, kChunk - 10, 20);  // across two uploads in flight
  ASSERT_OK(middle);
  EXPECT_TRUE(middle->toString() == written.substr(kChunk - 10, 20));
  faulty_->clearRules();
  faulty_->releaseHung();
  ASSERT_OK(fsA().fsync(file));
  ASSERT_OK(fsA().release(std::move(created->second)));
  auto back = readOnNewNode("inflight");
  ASSERT_OK(back);
  EXPECT_TRUE(*back == written);
}

// Writes beyond the dirty limit wait for uploads; when uploads fail they fail with EIO instead
// of waiting for a store that does not answer, and no byte written before is lost.
TEST_F(FilesystemTest, WritesOverTheDirtyLimitFailWhileUploadsFailAndLoseNothing) {
  auto small = startNode({.dirtyLimitPerFile = 2 * kChunk});
  auto created = small->fs->create(kRootIno, "big", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& file = *created->second;
  faulty_->addRule(FaultRule{
      .op = FaultOp::kMutate, .oidPrefix = "c.", .error = Status::timedOut("injected: no answer")});
  std::string accepted;
  Status failed;
  for (int i = 0; i < 16 && failed.isOk(); ++i) {
    const std::string part = randomBytes(kChunk, 40 + i);
    auto n = small->fs->write(file, accepted.size(), part);
    if (n) {
      accepted += part;
    } else {
      failed = n.error();
    }
  }
  EXPECT_EQ(errnoOf(failed), EIO) << "16 chunks written over a limit of 2 with failing uploads";
  EXPECT_EQ(errnoOf(small->fs->fsync(file)), EIO);
  faulty_->clearRules();
  ASSERT_OK(small->fs->fsync(file));
  ASSERT_OK(small->fs->release(std::move(created->second)));
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "big");
  ASSERT_OK(found);
  auto back = readFile(*other->fs, found->ino);
  ASSERT_OK(back);
  EXPECT_EQ(back->size(), accepted.size());
  EXPECT_TRUE(*back == accepted);
}

// While the store does not answer, a file this node knows is still looked up, opened, stat'ed
// and read from the cache; a name it does not know fails with EIO; statfs answers at once from
// the last figures.
TEST_F(FilesystemTest, KnownFilesStayReadableAndStatfsAnswersWhileTheStoreTimesOut) {
  auto node = startNode(
      {.attrTimeout = std::chrono::milliseconds(0), .probeInterval = std::chrono::milliseconds(0)});
  const std::string data = randomBytes(3 * kChunk, 50);
  auto ino = writeFile(*node->fs, kRootIno, "cached", data);
  ASSERT_OK(ino);
  auto warm = readFile(*node->fs, *ino);  // now in the node's chunk cache
  ASSERT_OK(warm);
  auto before = node->fs->statfs();
  ASSERT_OK(before);
  faulty_->addRule(FaultRule{.error = Status::timedOut("injected: no answer")});

  const auto t0 = std::chrono::steady_clock::now();
  auto looked = node->fs->lookup(kRootIno, "cached");
  ASSERT_OK(looked);
  EXPECT_EQ(looked->ino, *ino);
  node->fs->forget(*ino, 1);
  ASSERT_OK(node->fs->getattr(*ino));
  auto back = readFile(*node->fs, *ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data);
  EXPECT_EQ(errnoOf(node->fs->lookup(kRootIno, "unknown")), EIO);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // old enough to be renewed
  for (int i = 0; i < 3; ++i) {
    auto st = node->fs->statfs();
    ASSERT_OK(st);
    EXPECT_EQ(st->blocks, before->blocks);
    EXPECT_EQ(st->files, before->files);
  }
  // The injected faults answer at once, so all of this took no back-end timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(6));

  // The store answers again: a probe ends the hold, and another node's change is seen.
  faulty_->clearRules();
  const std::string newer = randomBytes(kChunk, 51);
  ASSERT_OK(writeFile(fsA(), kRootIno, "cached", newer));
  std::uint64_t size = 0;
  for (int i = 0; i < 100 && size != newer.size(); ++i) {
    auto attrs = node->fs->getattr(*ino);
    ASSERT_OK(attrs);
    size = attrs->size;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(size, newer.size()) << "the stale hold did not end once the store answered";
}

// Once the store has been found not answering (a stale hold), a read of a chunk this node does
// not hold waits DataReader::kDownFetchWait for it, not the store's whole timeout (30 s here): a
// reader waits one back-end timeout in all, not one for its lookup and another for its data.
TEST_F(FilesystemTest, AnUncachedReadDuringAStaleHoldDoesNotWaitAWholeTimeout) {
  auto node = startNode(
      {.attrTimeout = std::chrono::milliseconds(0), .probeInterval = std::chrono::seconds(60)});
  const std::string data = randomBytes(kChunk, 52);
  auto ino = writeFile(fsA(), kRootIno, "cold", data);  // written by another node: not cached
  ASSERT_OK(ino);
  auto known = node->fs->lookup(kRootIno, "cold");
  ASSERT_OK(known);
  ASSERT_GT(store_->defaultTimeout(), 3 * fs::DataReader::kDownFetchWait);
  // Chunk reads hang; every other call (revalidations, the hold's probes) times out at once.
  faulty_->addRule(FaultRule{.op = backends::StoreOp::kRead, .action = FaultAction::kHang});
  faulty_->addRule(FaultRule{.error = Status::timedOut("injected: no answer")});

  ASSERT_OK(node->fs->getattr(*ino));  // its revalidation times out: the stale hold begins
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(errnoOf(readFile(*node->fs, *ino)), EIO);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, fs::DataReader::kDownFetchWait);
  EXPECT_LT(waited, 2 * fs::DataReader::kDownFetchWait);

  // The store answers again: the hold ends at the next probe, and the file reads whole.
  faulty_->clearRules();
  faulty_->releaseHung();
  auto back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data);
}

// The dentry update fails, or is applied but its reply is lost: the flush fails, the changes
// stay unflushed, and the next flush commits them.
TEST_F(FilesystemTest, AFailedCommitIsRetriedByTheNextFlush) {
  std::string data = randomBytes(4 * kChunk, 23);
  auto ino = writeFile(fsA(), kRootIno, "f", data);
  ASSERT_OK(ino);
  for (FaultAction action : {FaultAction::kFail, FaultAction::kFailAfterApply}) {
    bool keep = false;
    auto file = fsA().open(*ino, O_RDWR, &keep);
    ASSERT_OK(file);
    const std::string patch = randomBytes(kChunk + 10, 24 + static_cast<int>(action));
    ASSERT_OK(writeAll(fsA(), **file, kChunk / 2, patch));
    ASSERT_OK(fsA().write(**file, 4 * kChunk, "tail"));
    data.replace(kChunk / 2, patch.size(), patch);
    data.resize(4 * kChunk);
    data += "tail";
    faulty_->addRule(
        FaultRule{.op = FaultOp::kMutate, .oidPrefix = "d.", .count = 1, .action = action});
    Status failed = fsA().flush(**file);
    EXPECT_EQ(errnoOf(failed), EIO) << failed.toString();
    auto local = fsA().read(**file, 0, 1 << 30);
    ASSERT_OK(local);
    EXPECT_TRUE(*local == data);
    ASSERT_OK(fsA().flush(**file));
    ASSERT_OK(fsA().release(std::move(*file)));
    auto other = startNode({});
    auto found = other->fs->lookup(kRootIno, "f");
    ASSERT_OK(found);
    EXPECT_EQ(found->size, data.size());
    auto stored = readFile(*other->fs, found->ino);
    ASSERT_OK(stored);
    EXPECT_TRUE(*stored == data) << static_cast<int>(action);
  }
}

TEST_F(FilesystemTest, FailedOrDamagedChunkReadsAreErrorsNeverWrongBytes) {
  const std::string data = randomBytes(3 * kChunk, 21);
  ASSERT_OK(writeFile(fsA(), kRootIno, "f", data));
  for (FaultAction action : {FaultAction::kFail, FaultAction::kCorruptRead}) {
    auto other = startNode({});  // a cold cache: reads reach the store
    auto found = other->fs->lookup(kRootIno, "f");
    ASSERT_OK(found);
    faulty_->addRule(FaultRule{.op = FaultOp::kRead, .oidPrefix = "c.", .action = action});
    bool keep = false;
    auto file = other->fs->open(found->ino, O_RDONLY, &keep);
    ASSERT_OK(file);
    auto r = other->fs->read(**file, kChunk - 10, 20);
    EXPECT_EQ(errnoOf(r), EIO) << static_cast<int>(action);
    faulty_->clearRules();
    auto retried = other->fs->read(**file, kChunk - 10, 20);  // nothing bad was cached
    ASSERT_OK(retried);
    EXPECT_TRUE(*retried == data.substr(kChunk - 10, 20));
    ASSERT_OK(other->fs->release(std::move(*file)));
  }
}

// The FUSE adapter replies to a read from whichever thread has its bytes: a read whose chunks
// must be fetched returns to its caller at once and answers, once, when they arrive; a read of a
// cached chunk answers before it returns.
TEST_F(FilesystemTest, AReadWaitingForItsChunksFreesTheCallerAndAnswersOnce) {
  const std::string data = randomBytes(3 * kChunk, 31);
  ASSERT_OK(writeFile(fsA(), kRootIno, "f", data));
  auto other = startNode({});  // a cold cache: reads reach the store
  auto found = other->fs->lookup(kRootIno, "f");
  ASSERT_OK(found);
  faulty_->addRule(
      FaultRule{.op = FaultOp::kRead, .oidPrefix = "c.", .action = FaultAction::kHang});
  struct Answers {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::uint64_t, std::string> bytesByOffset;
    int calls = 0;
    bool onCallersThread = false;
  };
  auto answers = std::make_shared<Answers>();
  const auto caller = std::this_thread::get_id();
  auto answerFor = [answers, caller](std::uint64_t offset) {
    return [answers, caller, offset](Result<Bytes> r) {
      std::lock_guard lock(answers->mu);
      ++answers->calls;
      answers->onCallersThread |= std::this_thread::get_id() == caller;
      answers->bytesByOffset[offset] = r ? std::string(r->view()) : "error";
      answers->cv.notify_all();
    };
  };
  other->fs->readInode(found->ino, 10, 100, answerFor(10));                   // one piece
  other->fs->readInode(found->ino, kChunk - 10, 20, answerFor(kChunk - 10));  // two chunks
  {
    std::lock_guard lock(answers->mu);
    EXPECT_EQ(answers->calls, 0);  // both fetches are held: the calls returned without answers
  }
  for (int i = 0; i < 1000 && faulty_->hungCalls() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  faulty_->clearRules();
  faulty_->releaseHung();
  {
    std::unique_lock lock(answers->mu);
    ASSERT_TRUE(
        answers->cv.wait_for(lock, std::chrono::seconds(10), [&] { return answers->calls >= 2; }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a second answer would come now
  std::lock_guard lock(answers->mu);
  EXPECT_EQ(answers->calls, 2);
  EXPECT_FALSE(answers->onCallersThread);
  EXPECT_EQ(answers->bytesByOffset[10], data.substr(10, 100));
  EXPECT_EQ(answers->bytesByOffset[kChunk - 10], data.substr(kChunk - 10, 20));

  std::optional<std::string> cached;
  other->fs->readInode(found->ino, 20, 30,
                       [&](Result<Bytes> r) { cached = r ? std::string(r->view()) : "error"; });
  EXPECT_EQ(cached, data.substr(20, 30));
}

}  // namespace
}  // namespace tierfs::testing
