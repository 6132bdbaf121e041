// fs::Filesystem and the store under it: chunks no file refers to any more are removed, and store
// errors reach the caller as errors, never as wrong bytes or lost commits.
#include <fcntl.h>

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

TEST_F(FilesystemTest, FailedChunkWritesFailTheFlushAndLeaveTheCommittedContent) {
  const std::string data = randomBytes(2 * kChunk, 19);
  auto ino = writeFile(fsA(), kRootIno, "precious", data);
  ASSERT_OK(ino);
  faulty_->addRule(FaultRule{.op = FaultOp::kMutate, .oidPrefix = "c."});
  bool keep = false;
  auto file = fsA().open(*ino, O_WRONLY, &keep);
  ASSERT_OK(file);
  ASSERT_OK(writeAll(fsA(), **file, 0, randomBytes(2 * kChunk, 20)));  // buffered: no error yet
  Status flushed = fsA().flush(**file);
  EXPECT_FALSE(flushed.isOk());
  EXPECT_EQ(errnoOf(flushed), EIO) << flushed.toString();
  (void)fsA().release(std::move(*file));
  faulty_->clearRules();

  auto back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data);
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "precious");
  ASSERT_OK(found);
  auto cold = readFile(*other->fs, found->ino);
  ASSERT_OK(cold);
  EXPECT_TRUE(*cold == data);
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

}  // namespace
}  // namespace tierfs::testing
