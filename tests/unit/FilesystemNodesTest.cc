// Two fs::Filesystem nodes (each with its own Volume object and chunk cache, as two daemons on
// two machines) over one store: close-to-open, readers that never mix versions, and concurrent
// commits of one file that are both kept.
#include <fcntl.h>

#include <atomic>
#include <random>
#include <thread>

#include "tests/unit/FilesystemFixture.h"

namespace tierfs::testing {
namespace {

const fs::FsOptions kFresh{.attrTimeout = Duration::zero()};  // sees other nodes at once

class FilesystemNodesTest : public FilesystemTest {
 protected:
  void SetUp() override {
    FilesystemTest::SetUp();
    b_ = startNode(kFresh);
    ASSERT_NE(b_, nullptr);
  }
  void TearDown() override { b_.reset(); }

  fs::Filesystem& fsB() { return *b_->fs; }

  // Content `version` of a file: distinct bytes per version, so a read tells them apart.
  static std::string versionBytes(int version, std::size_t size) {
    return randomBytes(size, 1000 + version);
  }

  std::unique_ptr<FsNode> b_;
};

TEST_F(FilesystemNodesTest, AFileFlushedOnOneNodeIsSeenByTheOtherAfterOpen) {
  const std::string v1 = versionBytes(1, 3 * kChunk + 5);
  auto created = fsA().create(kRootIno, "f", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, writer] = *created;
  ASSERT_OK(writeAll(fsA(), *writer, 0, v1));
  ASSERT_OK(fsA().flush(*writer));  // close-to-open: what a close commits

  auto found = fsB().lookup(kRootIno, "f");
  ASSERT_OK(found);
  EXPECT_EQ(found->ino, inode.ino);
  EXPECT_EQ(found->size, v1.size());
  bool keep = true;
  auto old = fsB().open(found->ino, O_RDONLY, &keep);
  ASSERT_OK(old);
  EXPECT_FALSE(keep);  // the kernel has no pages of this file yet
  auto data = fsB().read(**old, 0, 1 << 30);
  ASSERT_OK(data);
  EXPECT_TRUE(*data == v1);

  // A rewrites it shorter; B's open handle keeps reading what it opened.
  const std::string v2 = versionBytes(2, 2 * kChunk + 1);
  ASSERT_OK(fsA().setattr(inode.ino, {.setSize = true, .size = 0}));
  ASSERT_OK(writeAll(fsA(), *writer, 0, v2));
  ASSERT_OK(fsA().release(std::move(writer)));
  data = fsB().read(**old, 0, 1 << 30);
  ASSERT_OK(data);
  EXPECT_TRUE(*data == v1);

  // A new open on B sees the new content, and tells the kernel its pages are stale.
  auto attrs = fsB().getattr(found->ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, v2.size());
  auto fresh = fsB().open(found->ino, O_RDONLY, &keep);
  ASSERT_OK(fresh);
  EXPECT_FALSE(keep);
  data = fsB().read(**fresh, 0, 1 << 30);
  ASSERT_OK(data);
  EXPECT_TRUE(*data == v2);
  data = fsB().read(**old, 0, 1 << 30);  // the older handle still has its version
  ASSERT_OK(data);
  EXPECT_TRUE(*data == v1);
  ASSERT_OK(fsB().release(std::move(*old)));
  ASSERT_OK(fsB().release(std::move(*fresh)));
  // Opened again with nothing changed: the kernel may keep its pages.
  auto again = fsB().open(found->ino, O_RDONLY, &keep);
  ASSERT_OK(again);
  EXPECT_TRUE(keep);
  ASSERT_OK(fsB().release(std::move(*again)));
}

TEST_F(FilesystemNodesTest, ReadersOnAnotherNodeNeverSeeAMixOfVersions) {
  constexpr int kVersions = 12;
  const std::size_t size = 6 * kChunk;
  std::vector<std::string> versions;
  for (int v = 0; v <= kVersions; ++v) versions.push_back(versionBytes(v, size));
  auto ino = writeFile(fsA(), kRootIno, "f", versions[0]);
  ASSERT_OK(ino);
  ASSERT_OK(fsB().lookup(kRootIno, "f"));
  bool keep = false;
  auto held = fsB().open(*ino, O_RDONLY, &keep);  // opened at version 0
  ASSERT_OK(held);

  // Which version `data` (read at `offset`) is wholly from; -1 for a mix or garbage.
  auto versionOf = [&](const std::string& data, std::size_t offset) {
    for (int v = 0; v <= kVersions; ++v) {
      if (versions[v].compare(offset, data.size(), data) == 0) return v;
    }
    return -1;
  };

  std::atomic<bool> done{false};
  auto rewrite = [&] {
    for (int v = 1; v <= kVersions; ++v) {
      bool k = false;
      auto file = fsA().open(*ino, O_WRONLY, &k);
      ASSERT_OK(file);
      ASSERT_OK(writeAll(fsA(), **file, 0, versions[v]));
      ASSERT_OK(fsA().release(std::move(*file)));
    }
  };
  int reads = 0, lastSeen = 0;
  auto readAlong = [&] {
    std::mt19937_64 rng(6);
    while (!done || reads < 5) {
      // The handle opened before the rewrites reads version 0 only.
      const std::size_t off = rng() % size;
      auto part = fsB().read(**held, off, 2 * kChunk);
      ASSERT_OK(part);
      ASSERT_EQ(versionOf(part->toString(), off), 0) << "held handle, read at " << off;
      // Each new open reads one version, whole, and never an older one than the last open saw.
      bool k = false;
      auto file = fsB().open(*ino, O_RDONLY, &k);
      ASSERT_OK(file);
      auto whole = fsB().read(**file, 0, 1 << 30);
      ASSERT_OK(whole);
      ASSERT_EQ(whole->size(), size);
      const int v = versionOf(whole->toString(), 0);
      ASSERT_GE(v, lastSeen) << "read " << reads;
      lastSeen = v;
      ASSERT_OK(fsB().release(std::move(*file)));
      ++reads;
    }
  };
  std::thread writer([&] {
    rewrite();
    done = true;
  });
  readAlong();
  writer.join();
  ASSERT_FALSE(HasFatalFailure());
  // One last open after the writer is done sees the last version.
  auto last = readFile(fsB(), *ino);
  ASSERT_OK(last);
  lastSeen = versionOf(*last, 0);
  EXPECT_EQ(lastSeen, kVersions);
  ASSERT_OK(fsB().release(std::move(*held)));
}

// B's commit is guarded on the dentry it last read; A changed it first, so B's commit replays its
// journal over A's: both changes are kept.
TEST_F(FilesystemNodesTest, CommitsOfDifferentRangesFromTwoNodesAreBothKept) {
  std::string expected = randomBytes(8 * kChunk, 7);
  auto ino = writeFile(fsA(), kRootIno, "f", expected);
  ASSERT_OK(ino);
  ASSERT_OK(fsB().lookup(kRootIno, "f"));
  bool keep = false;
  auto onA = fsA().open(*ino, O_RDWR, &keep);
  auto onB = fsB().open(*ino, O_RDWR, &keep);
  ASSERT_OK(onA);
  ASSERT_OK(onB);
  const std::string a1 = randomBytes(kChunk, 8), a2 = randomBytes(100, 9);
  const std::string b1 = randomBytes(2 * kChunk, 10), b2 = randomBytes(kChunk + 50, 11);
  ASSERT_OK(writeAll(fsA(), **onA, 0, a1));             // a whole chunk
  ASSERT_OK(fsA().write(**onA, 5 * kChunk + 300, a2));  // part of one
  ASSERT_OK(writeAll(fsB(), **onB, 2 * kChunk, b1));    // two other chunks
  ASSERT_OK(writeAll(fsB(), **onB, 8 * kChunk, b2));    // past A's end of file
  expected.replace(0, a1.size(), a1);
  expected.replace(5 * kChunk + 300, a2.size(), a2);
  expected.replace(2 * kChunk, b1.size(), b1);
  expected += b2;

  ASSERT_OK(fsA().flush(**onA));
  ASSERT_OK(fsB().flush(**onB));  // replayed over A's commit
  auto onB2 = fsB().read(**onB, 0, 1 << 30);
  ASSERT_OK(onB2);
  EXPECT_TRUE(*onB2 == expected) << "B after its commit";
  ASSERT_OK(fsA().release(std::move(*onA)));
  ASSERT_OK(fsB().release(std::move(*onB)));

  auto c = startNode({});
  auto found = c->fs->lookup(kRootIno, "f");
  ASSERT_OK(found);
  EXPECT_EQ(found->size, expected.size());
  auto data = readFile(*c->fs, found->ino);
  ASSERT_OK(data);
  EXPECT_TRUE(*data == expected);
}

TEST_F(FilesystemNodesTest, ConcurrentCommitsFromTwoNodesAreBothKept) {
  constexpr int kRounds = 8;
  std::string expected = randomBytes(4 * kChunk, 12);
  auto ino = writeFile(fsA(), kRootIno, "f", expected);
  ASSERT_OK(ino);
  ASSERT_OK(fsB().lookup(kRootIno, "f"));
  auto a = startNode(kFresh);  // both nodes read the dentry afresh
  ASSERT_OK(a->fs->lookup(kRootIno, "f"));
  // A writes the first half of chunk 0 and chunk 1, B the second half of chunk 0 and chunk 3;
  // each commits after every write, at the same time as the other.
  auto run = [&](fs::Filesystem& f, std::uint64_t at1, std::uint64_t at2, int seed) {
    bool keep = false;
    auto file = f.open(*ino, O_RDWR, &keep);
    ASSERT_OK(file);
    for (int r = 0; r < kRounds; ++r) {
      ASSERT_OK(f.write(**file, at1, randomBytes(kChunk / 2, seed + r)));
      ASSERT_OK(f.write(**file, at2, randomBytes(kChunk, seed + 100 + r)));
      ASSERT_OK(f.flush(**file));
    }
    ASSERT_OK(f.release(std::move(*file)));
  };
  std::thread onA([&] { run(*a->fs, 0, kChunk, 100); });
  std::thread onB([&] { run(fsB(), kChunk / 2, 3 * kChunk, 200); });
  onA.join();
  onB.join();
  const int last = kRounds - 1;
  expected.replace(0, kChunk / 2, randomBytes(kChunk / 2, 100 + last));
  expected.replace(kChunk, kChunk, randomBytes(kChunk, 200 + last));
  expected.replace(kChunk / 2, kChunk / 2, randomBytes(kChunk / 2, 200 + last));
  expected.replace(3 * kChunk, kChunk, randomBytes(kChunk, 300 + last));

  auto data = readOnNewNode("f");
  ASSERT_OK(data);
  EXPECT_TRUE(*data == expected);
}

// A writes two ranges of one chunk with a gap between them; B writes into the gap. Whichever
// commits last, both changes are kept: A's commit must not put back the gap's old bytes.
TEST_F(FilesystemNodesTest, WritesAroundAnotherNodesWriteInOneChunkAreBothKept) {
  for (bool bFirst : {true, false}) {
    std::string expected = randomBytes(2 * kChunk, 13);
    auto ino = writeFile(fsA(), kRootIno, "f", expected);
    ASSERT_OK(ino);
    ASSERT_OK(fsB().lookup(kRootIno, "f"));
    bool keep = false;
    auto onA = fsA().open(*ino, O_RDWR, &keep);
    auto onB = fsB().open(*ino, O_RDWR, &keep);
    ASSERT_OK(onA);
    ASSERT_OK(onB);
    ASSERT_OK(fsA().write(**onA, kChunk + 100, "AAAA"));
    ASSERT_OK(fsA().write(**onA, kChunk + 200, "aaaa"));
    ASSERT_OK(fsB().write(**onB, kChunk + 150, "BBBB"));
    expected.replace(kChunk + 100, 4, "AAAA");
    expected.replace(kChunk + 200, 4, "aaaa");
    expected.replace(kChunk + 150, 4, "BBBB");
    if (bFirst) {
      ASSERT_OK(fsB().flush(**onB));
      ASSERT_OK(fsA().flush(**onA));
    } else {
      ASSERT_OK(fsA().flush(**onA));
      ASSERT_OK(fsB().flush(**onB));
    }
    ASSERT_OK(fsA().release(std::move(*onA)));
    ASSERT_OK(fsB().release(std::move(*onB)));
    auto c = startNode({});
    auto found = c->fs->lookup(kRootIno, "f");
    ASSERT_OK(found);
    auto data = readFile(*c->fs, found->ino);
    ASSERT_OK(data);
    EXPECT_TRUE(data->substr(kChunk + 100, 104) == expected.substr(kChunk + 100, 104))
        << (bFirst ? "B committed first" : "A committed first");
    EXPECT_TRUE(*data == expected);
  }
}

TEST_F(FilesystemNodesTest, AFileReplacedOnAnotherNodeIsStale) {
  auto ino = writeFile(fsA(), kRootIno, "f", "first");
  ASSERT_OK(ino);
  auto found = fsB().lookup(kRootIno, "f");
  ASSERT_OK(found);
  ASSERT_OK(fsA().unlink(kRootIno, "f"));
  ASSERT_OK(writeFile(fsA(), kRootIno, "f", "second"));
  bool keep = false;
  EXPECT_EQ(errnoOf(fsB().open(found->ino, O_RDONLY, &keep)), ESTALE);
  EXPECT_EQ(errnoOf(fsB().getattr(found->ino)), ESTALE);
  // The kernel looks the name up again and finds the new file.
  auto again = fsB().lookup(kRootIno, "f");
  ASSERT_OK(again);
  EXPECT_NE(again->ino, found->ino);
  auto data = readFile(fsB(), again->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "second");
}

// A holds the file open at an old version when B rewrites it; A then removes it. At A's last
// close the chunks to remove are those of the version that was removed, not of the one A opened.
TEST_F(FilesystemNodesTest, ChunksOfAFileRewrittenElsewhereAndUnlinkedWhileOpenAreRemoved) {
  auto a = startNode({.gcDelay = Duration::zero()});
  auto b = startNode({.attrTimeout = Duration::zero(), .gcDelay = Duration::zero()});
  auto ino = writeFile(*a->fs, kRootIno, "f", versionBytes(1, 3 * kChunk));
  ASSERT_OK(ino);
  bool keep = false;
  auto held = a->fs->open(*ino, O_RDONLY, &keep);
  ASSERT_OK(held);
  ASSERT_OK(b->fs->lookup(kRootIno, "f"));
  ASSERT_OK(writeFile(*b->fs, kRootIno, "f", versionBytes(2, 2 * kChunk)));
  ASSERT_OK(b->fs->flushAll());
  ASSERT_OK(a->fs->unlink(kRootIno, "f"));
  ASSERT_OK(a->fs->release(std::move(*held)));
  ASSERT_OK(a->fs->flushAll());
  EXPECT_EQ(chunksSettleTo(*ino, {}), std::set<cache::ChunkKey>{});
}

TEST_F(FilesystemNodesTest, NamespaceChangesAreSeenByTheOtherNode) {
  auto dir = fsA().mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(dir);
  ASSERT_OK(writeFile(fsA(), dir->ino, "x", "x"));
  auto d = fsB().lookup(kRootIno, "d");
  ASSERT_OK(d);
  auto list = [&] {
    std::vector<std::string> names;
    auto cursor = fsB().opendir(d->ino);
    EXPECT_OK(cursor);
    if (!cursor) return names;
    EXPECT_OK(fsB().readdir(**cursor, 2, [&](const fs::DirEntry& e) {
      names.emplace_back(e.name);
      return true;
    }));
    return names;
  };
  EXPECT_EQ(list(), std::vector<std::string>{"x"});
  ASSERT_OK(fsA().rename(dir->ino, "x", dir->ino, "y", 0));
  ASSERT_OK(fsA().mkdir(dir->ino, "z", 0755, {}));
  EXPECT_EQ(list(), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(errnoOf(fsB().lookup(d->ino, "x")), ENOENT);
  // A name taken on A cannot be created on B.
  EXPECT_EQ(errnoOf(fsB().mkdir(d->ino, "y", 0755, {})), EEXIST);
  EXPECT_EQ(errnoOf(fsB().rmdir(kRootIno, "d")), ENOTEMPTY);
  ASSERT_OK(fsB().unlink(d->ino, "y"));
  ASSERT_OK(fsB().rmdir(d->ino, "z"));
  ASSERT_OK(fsB().rmdir(kRootIno, "d"));
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "d")), ENOENT);
}

}  // namespace
}  // namespace tierfs::testing
