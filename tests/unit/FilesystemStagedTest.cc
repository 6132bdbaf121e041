// Files written whole before they have a name (Filesystem::stageFile, publish): what tierfs
// import writes.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <latch>
#include <thread>

#include "tests/unit/FilesystemFixture.h"

namespace tierfs::testing {
namespace {

using backends::FaultAction;
using backends::FaultOp;
using backends::FaultRule;

fs::NewFileAttrs someAttrs() {
  fs::NewFileAttrs a;
  a.set = {.setMode = true,
           .setUid = true,
           .setGid = true,
           .setAtime = true,
           .setMtime = true,
           .mode = 0640,
           .uid = 7,
           .gid = 8,
           .atime = {900, 0},
           .mtime = {1000, 5}};
  a.xattrs = {{"user.origin", "camera 2"}};
  return a;
}

// Other nodes see no name until publish, then the whole file with its attributes; publishing
// writes the last chunk and one dentry, and reads nothing.
TEST_F(FilesystemTest, AStagedFileAppearsWholeInOneDentryWrite) {
  const std::string data = randomBytes(kChunk * 5 / 2, 1);
  auto staged = fsA().stageFile(kRootIno, 0600, {});
  ASSERT_OK(staged);
  ASSERT_OK(fsA().writeNew(**staged, 0, data.substr(0, kChunk + 100)));
  ASSERT_OK(fsA().writeNew(**staged, kChunk + 100, data.substr(kChunk + 100)));
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(errnoOf(other->fs->lookup(kRootIno, "f")), ENOENT);

  (*staged)->writer->waitForUploads();  // the two whole chunks, uploaded as they were written
  store_->reset();
  auto made = fsA().publish(**staged, kRootIno, "f", someAttrs());
  ASSERT_OK(made);
  EXPECT_EQ(store_->counts().dataWrites, 1u);  // the last, partial chunk
  EXPECT_EQ(store_->counts().mutations, 2u);   // ... and the dentry
  EXPECT_EQ(store_->counts().omapGets + store_->counts().reads, 0u);
  EXPECT_EQ(made->size, data.size());
  auto stored = fsA().getxattr(made->ino, "user.tierfs.stored_size");  // stats every chunk
  ASSERT_OK(stored);
  EXPECT_EQ(std::to_string((*staged)->storedBytes), *stored);
  EXPECT_GT((*staged)->storedBytes, data.size());  // random bytes: stored raw, in frames

  auto seen = other->fs->lookup(kRootIno, "f");
  ASSERT_OK(seen);
  EXPECT_EQ(seen->ino, made->ino);
  EXPECT_EQ(seen->size, data.size());
  EXPECT_EQ(seen->mode, 0640u);
  EXPECT_EQ(seen->uid, 7u);
  EXPECT_EQ(seen->gid, 8u);
  EXPECT_EQ(seen->atime, (fs::Timestamp{900, 0}));
  EXPECT_EQ(seen->mtime, (fs::Timestamp{1000, 5}));
  auto xattr = other->fs->getxattr(seen->ino, "user.origin");
  ASSERT_OK(xattr);
  EXPECT_EQ(*xattr, "camera 2");
  auto read = readFile(*other->fs, seen->ino);
  ASSERT_OK(read);
  EXPECT_TRUE(*read == data) << "content differs";
  EXPECT_EQ(chunkObjects(made->ino), referencedChunks(*seen));  // nothing else was left
  EXPECT_EQ(errnoOf(fsA().writeNew(**staged, 0, "late")), EBADF);
}

// A name taken meanwhile: publish fails with EEXIST and changes nothing; the staged file can
// still be published under another name.
TEST_F(FilesystemTest, PublishingOverATakenNameFailsAndKeepsTheStagedFile) {
  auto staged = fsA().stageFile(kRootIno, 0644, {});
  ASSERT_OK(staged);
  ASSERT_OK(fsA().writeNew(**staged, 0, "new content"));
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  auto existing = writeFile(*other->fs, kRootIno, "f", "old");
  ASSERT_OK(existing);

  EXPECT_EQ(errnoOf(fsA().publish(**staged, kRootIno, "f", someAttrs())), EEXIST);
  auto old = readFile(*other->fs, *existing);
  ASSERT_OK(old);
  EXPECT_EQ(*old, "old");

  ASSERT_OK(fsA().publish(**staged, kRootIno, "g", someAttrs()));
  auto seen = other->fs->lookup(kRootIno, "g");
  ASSERT_OK(seen);
  auto read = readFile(*other->fs, seen->ino);
  ASSERT_OK(read);
  EXPECT_EQ(*read, "new content");
  EXPECT_EQ(errnoOf(fsA().publish(**staged, kRootIno, "h", someAttrs())), EINVAL);
}

// A staged file given up leaves no chunk behind, and no name.
TEST_F(FilesystemTest, ADiscardedStagedFileLeavesNothing) {
  auto staged = fsA().stageFile(kRootIno, 0644, {});
  ASSERT_OK(staged);
  const Ino ino = (*staged)->inode.ino;
  ASSERT_OK(fsA().writeNew(**staged, 0, randomBytes(kChunk * 3, 2)));
  (*staged)->writer->waitForUploads();
  EXPECT_EQ(chunkObjects(ino).size(), 3u);  // full chunks go to the store as they are written
  fsA().discard(**staged);
  ASSERT_OK(fsA().flushAll());  // runs the chunk removals now
  EXPECT_EQ(chunksSettleTo(ino, {}), std::set<cache::ChunkKey>{});
  auto listing = fsA().opendir(kRootIno);
  ASSERT_OK(listing);
  std::vector<std::string> names;
  ASSERT_OK(fsA().readdir(**listing, 0, [&](const fs::DirEntry& e) {
    names.emplace_back(e.name);
    return true;
  }));
  EXPECT_EQ(names, (std::vector<std::string>{".", ".."}));
}

// publish checks the xattrs as setxattr does, and publishes nothing when one is refused.
TEST_F(FilesystemTest, PublishRefusesXattrsSetxattrWould) {
  auto staged = fsA().stageFile(kRootIno, 0644, {});
  ASSERT_OK(staged);
  fs::NewFileAttrs attrs;
  attrs.xattrs = {{"trusted.x", "1"}};
  EXPECT_EQ(errnoOf(fsA().publish(**staged, kRootIno, "f", attrs)), EOPNOTSUPP);
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "f")), ENOENT);
}

// Files published into one directory at once share its dentry updates (a group commit);
// `taken` names are created by another node first.
class GroupPublishTest : public FilesystemTest {
 protected:
  static constexpr int kFiles = 8;
  std::string nameOf(int i) { return "f" + std::to_string(i); }
  std::string dataOf(int i) { return randomBytes(kChunk, 100 + i); }  // whole: uploaded at once

  // Stages kFiles files, then publishes them from kFiles threads at once while the first
  // directory update is held; yields each publish's errno.
  std::vector<int> publishAtOnce() {
    std::vector<std::unique_ptr<fs::NewFile>> files;
    for (int i = 0; i < kFiles; ++i) {
      auto staged = fsA().stageFile(kRootIno, 0644, {});
      if (!staged) ADD_FAILURE() << staged.error().toString();
      if (!staged) return {};
      EXPECT_OK(fsA().writeNew(**staged, 0, dataOf(i)));
      (*staged)->writer->waitForUploads();
      files.push_back(std::move(*staged));
    }
    faulty_->addRule(FaultRule{
        .op = FaultOp::kMutate, .oidPrefix = "d.", .count = 1, .action = FaultAction::kHang});
    store_->reset();
    std::vector<int> errors(kFiles);
    std::latch start(kFiles);
    std::vector<std::thread> threads;
    for (int i = 0; i < kFiles; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        errors[i] = errnoOf(fsA().publish(*files[i], kRootIno, nameOf(i), {}));
      });
    }
    // The first update is held until the others have long been queued behind it.
    for (int i = 0; i < 1000 && faulty_->hungCalls() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    faulty_->releaseHung();
    for (auto& t : threads) t.join();
    return errors;
  }

  std::uint64_t dirUpdates() { return store_->counts().mutations - store_->counts().dataWrites; }
};

TEST_F(GroupPublishTest, FilesPublishedAtOnceShareOneDentryUpdate) {
  EXPECT_EQ(publishAtOnce(), std::vector<int>(kFiles, 0));
  EXPECT_EQ(dirUpdates(), 2u);  // the first alone, the seven that came meanwhile together
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  for (int i = 0; i < kFiles; ++i) {
    auto seen = other->fs->lookup(kRootIno, nameOf(i));
    ASSERT_OK(seen);
    auto read = readFile(*other->fs, seen->ino);
    ASSERT_OK(read);
    EXPECT_TRUE(*read == dataOf(i)) << nameOf(i);
  }
}

TEST_F(GroupPublishTest, ATakenNameInAGroupFailsAloneAndTheOthersArePublished) {
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  ASSERT_OK(writeFile(*other->fs, kRootIno, nameOf(5), "theirs"));
  std::vector<int> expected(kFiles, 0);
  expected[5] = EEXIST;
  EXPECT_EQ(publishAtOnce(), expected);
  for (int i = 0; i < kFiles; ++i) {
    auto seen = other->fs->lookup(kRootIno, nameOf(i));
    ASSERT_OK(seen);
    auto read = readFile(*other->fs, seen->ino);
    ASSERT_OK(read);
    EXPECT_TRUE(*read == (i == 5 ? "theirs" : dataOf(i))) << nameOf(i);
  }
}

// The store applied the dentry update but its answer was lost: publishing again finds the
// name holding this very inode and succeeds, with one entry.
TEST_F(FilesystemTest, APublishWhoseAnswerWasLostSucceedsWhenRetried) {
  auto staged = fsA().stageFile(kRootIno, 0644, {});
  ASSERT_OK(staged);
  ASSERT_OK(fsA().writeNew(**staged, 0, "content"));
  faulty_->addRule(FaultRule{.op = FaultOp::kMutate,
                             .oidPrefix = "d.",
                             .count = 1,
                             .action = FaultAction::kFailAfterApply,
                             .error = Status::timedOut("injected: answer lost")});
  EXPECT_EQ(errnoOf(fsA().publish(**staged, kRootIno, "f", {})), EIO);  // as the kernel gets it
  auto made = fsA().publish(**staged, kRootIno, "f", {});
  ASSERT_OK(made);
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  auto seen = other->fs->lookup(kRootIno, "f");
  ASSERT_OK(seen);
  EXPECT_EQ(seen->ino, made->ino);
  auto read = readFile(*other->fs, seen->ino);
  ASSERT_OK(read);
  EXPECT_EQ(*read, "content");
}

}  // namespace
}  // namespace tierfs::testing
