// fs::Filesystem file contents: writes and reads, commits and what they cost, truncation. Chunk
// removal and store errors are in FilesystemStorageTest.cc, namespace operations in
// FilesystemNamespaceTest.cc, two nodes sharing a volume in FilesystemNodesTest.cc.
#include <fcntl.h>

#include <algorithm>
#include <random>
#include <thread>

#include "tests/unit/FilesystemFixture.h"

namespace tierfs::testing {
namespace {

std::string zeros(std::size_t n) { return std::string(n, '\0'); }

TEST_F(FilesystemTest, SmallFileIsReadBackBeforeAndAfterClose) {
  auto created = fsA().create(kRootIno, "small", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, file] = *created;
  EXPECT_TRUE(inode.isFile());
  EXPECT_EQ(inode.mode, 0644u);
  auto n = fsA().write(*file, 0, "hello, world");
  ASSERT_OK(n);
  EXPECT_EQ(*n, 12u);
  auto back = fsA().read(*file, 0, 100);
  ASSERT_OK(back);
  EXPECT_EQ(*back, "hello, world");
  auto middle = fsA().read(*file, 7, 3);
  ASSERT_OK(middle);
  EXPECT_EQ(*middle, "wor");
  auto past = fsA().read(*file, 12, 10);
  ASSERT_OK(past);
  EXPECT_EQ(*past, "");
  auto attrs = fsA().getattr(inode.ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, 12u);  // unflushed, and shown
  ASSERT_OK(fsA().release(std::move(file)));

  auto again = readFile(fsA(), inode.ino);
  ASSERT_OK(again);
  EXPECT_EQ(*again, "hello, world");
  // A new node (a remount) reads what was committed.
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "small");
  ASSERT_OK(found);
  EXPECT_EQ(found->size, 12u);
  auto fresh = readFile(*other->fs, found->ino);
  ASSERT_OK(fresh);
  EXPECT_EQ(*fresh, "hello, world");
}

TEST_F(FilesystemTest, EmptyFileHasNoChunks) {
  auto ino = writeFile(fsA(), kRootIno, "empty", "");
  ASSERT_OK(ino);
  auto attrs = fsA().getattr(*ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, 0u);
  EXPECT_TRUE(attrs->extents.empty());
  auto data = readFile(fsA(), *ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "");
  EXPECT_TRUE(chunkObjects(*ino).empty());
}

TEST_F(FilesystemTest, MultiChunkFileReadsBackInAnyWindow) {
  const std::string data = randomBytes(10 * kChunk + 12345, 1);
  auto created = fsA().create(kRootIno, "big", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, file] = *created;
  ASSERT_OK(writeAll(fsA(), *file, 0, data));
  std::mt19937_64 rng(2);
  auto checkWindows = [&](fs::OpenFile& f, const char* when) {
    for (int i = 0; i < 40; ++i) {
      const std::uint64_t off = rng() % (data.size() + 10);
      const std::uint64_t len = rng() % (3 * kChunk);
      auto r = fsA().read(f, off, len);
      ASSERT_OK(r);
      ASSERT_EQ(*r, off >= data.size() ? "" : data.substr(off, len)) << when << " at " << off;
    }
  };
  checkWindows(*file, "unflushed");
  ASSERT_OK(fsA().flush(*file));
  checkWindows(*file, "flushed");
  ASSERT_OK(fsA().release(std::move(file)));

  auto back = readFile(fsA(), inode.ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data);
  auto attrs = fsA().getattr(inode.ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, data.size());
  EXPECT_EQ(chunkObjects(inode.ino).size(), 11u);  // one per chunk slot
  EXPECT_EQ(attrs->extents.size(), 1u);            // written front to back: one extent

  auto other = startNode({});  // a cold cache reads every chunk from the store
  auto found = other->fs->lookup(kRootIno, "big");
  ASSERT_OK(found);
  auto cold = readFile(*other->fs, found->ino);
  ASSERT_OK(cold);
  EXPECT_TRUE(*cold == data);
}

TEST_F(FilesystemTest, SparseFileReadsZerosInItsHoles) {
  auto created = fsA().create(kRootIno, "sparse", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, file] = *created;
  const std::uint64_t tailAt = 10 * kChunk + 123;
  ASSERT_OK(fsA().write(*file, 5, "head"));
  ASSERT_OK(fsA().write(*file, tailAt, "tail"));
  std::string expected = zeros(tailAt + 4);
  expected.replace(5, 4, "head");
  expected.replace(tailAt, 4, "tail");
  auto before = fsA().read(*file, 0, expected.size() + 100);
  ASSERT_OK(before);
  EXPECT_TRUE(*before == expected);
  ASSERT_OK(fsA().release(std::move(file)));

  auto after = readFile(fsA(), inode.ino);
  ASSERT_OK(after);
  EXPECT_TRUE(*after == expected);
  auto attrs = fsA().getattr(inode.ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, tailAt + 4);
  EXPECT_EQ(chunkObjects(inode.ino).size(), 2u);  // the holes take no chunks
  auto hole = fsA().readInode(inode.ino, 3 * kChunk, 2 * kChunk);
  ASSERT_OK(hole);
  EXPECT_TRUE(*hole == zeros(2 * kChunk));
}

// Random writes (unaligned, overlapping, past the end, over holes) checked against a string
// holding what the file should be, before each flush, after it, and through a fresh open.
TEST_F(FilesystemTest, RandomWritesMatchAModel) {
  auto created = fsA().create(kRootIno, "model", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, file] = *created;
  std::string model;
  std::mt19937_64 rng(3);
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 12; ++i) {
      const std::uint64_t off = rng() % (6 * kChunk);
      const std::uint64_t len = 1 + rng() % (i % 3 == 0 ? 2 * kChunk : 3000);
      const std::string bytes = randomBytes(len, rng());
      ASSERT_OK(fsA().write(*file, off, bytes));
      if (model.size() < off + len) model.resize(off + len, '\0');
      model.replace(off, len, bytes);
    }
    auto unflushed = fsA().read(*file, 0, model.size() + 1);
    ASSERT_OK(unflushed);
    ASSERT_TRUE(*unflushed == model) << "round " << round << " before flush";
    ASSERT_OK(fsA().flush(*file));
    auto flushed = fsA().read(*file, 0, model.size() + 1);
    ASSERT_OK(flushed);
    ASSERT_TRUE(*flushed == model) << "round " << round << " after flush";
    auto fresh = readFile(fsA(), inode.ino);
    ASSERT_OK(fresh);
    ASSERT_TRUE(*fresh == model) << "round " << round << " through a fresh open";
  }
  ASSERT_OK(fsA().release(std::move(file)));
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "model");
  ASSERT_OK(found);
  EXPECT_EQ(found->size, model.size());
  auto cold = readFile(*other->fs, found->ino);
  ASSERT_OK(cold);
  EXPECT_TRUE(*cold == model);
}

TEST_F(FilesystemTest, OverwriteInTheMiddleKeepsTheRest) {
  std::string data = randomBytes(3 * kChunk, 4);
  auto ino = writeFile(fsA(), kRootIno, "mid", data);
  ASSERT_OK(ino);
  bool keep = false;
  auto file = fsA().open(*ino, O_WRONLY, &keep);
  ASSERT_OK(file);
  const std::string patch = randomBytes(100, 5);
  ASSERT_OK(fsA().write(**file, kChunk + kChunk / 2, patch));
  ASSERT_OK(fsA().flush(**file));
  ASSERT_OK(fsA().release(std::move(*file)));
  data.replace(kChunk + kChunk / 2, patch.size(), patch);
  auto back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data);
  auto attrs = fsA().getattr(*ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, 3u * kChunk);
}

// A commit uploads what changed and rewrites one dentry, whatever the size of the file.
TEST_F(FilesystemTest, CommitCostsWhatChangedNotTheFileSize) {
  const std::uint64_t fileSize = 40 * kChunk;
  std::string data = randomBytes(fileSize, 6);
  auto ino = writeFile(fsA(), kRootIno, "large", data);
  ASSERT_OK(ino);

  auto expectCost = [&](const char* what, std::uint64_t changed) {
    const StoreCounts c = store_->counts();
    EXPECT_EQ(c.dataWrites, 1u) << what;
    EXPECT_GE(c.dataBytes, changed) << what;
    EXPECT_LE(c.dataBytes, changed + 64) << what;  // + the chunk frame's header
    EXPECT_LT(c.metaBytes, 1024u) << what;         // the file's dentry
    EXPECT_LE(c.mutations, 3u) << what;            // the chunk, the dentry, maybe an id block
  };

  // Append one chunk.
  const std::string more = randomBytes(kChunk, 7);
  store_->reset();
  {
    bool keep = false;
    auto file = fsA().open(*ino, O_WRONLY | O_APPEND, &keep);
    ASSERT_OK(file);
    ASSERT_OK(fsA().write(**file, 0, more));
    ASSERT_OK(fsA().flush(**file));
    expectCost("append", kChunk);
    ASSERT_OK(fsA().release(std::move(*file)));
  }
  data += more;

  // Overwrite one chunk in the middle.
  const std::string patch = randomBytes(kChunk, 8);
  store_->reset();
  {
    bool keep = false;
    auto file = fsA().open(*ino, O_WRONLY, &keep);
    ASSERT_OK(file);
    ASSERT_OK(fsA().write(**file, 20 * kChunk, patch));
    ASSERT_OK(fsA().flush(**file));
    expectCost("overwrite of a chunk", kChunk);
    ASSERT_OK(fsA().release(std::move(*file)));
  }
  data.replace(20 * kChunk, kChunk, patch);

  // Overwrite a few bytes in the middle: the chunk holds those bytes only.
  store_->reset();
  {
    bool keep = false;
    auto file = fsA().open(*ino, O_WRONLY, &keep);
    ASSERT_OK(file);
    ASSERT_OK(fsA().write(**file, 30 * kChunk + 1000, "0123456789"));
    ASSERT_OK(fsA().flush(**file));
    expectCost("overwrite of 10 bytes", 10);
    ASSERT_OK(fsA().release(std::move(*file)));
  }
  data.replace(30 * kChunk + 1000, 10, "0123456789");

  auto attrs = fsA().getattr(*ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, fileSize + kChunk);
  EXPECT_LE(attrs->extents.size(), 6u);
  auto back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data);
}

TEST_F(FilesystemTest, TruncateDownAndUpReadsZerosBeyondTheCut) {
  const std::string data = randomBytes(3 * kChunk, 9);
  auto ino = writeFile(fsA(), kRootIno, "trunc", data);
  ASSERT_OK(ino);

  fs::SetAttr down{.setSize = true, .size = kChunk + 100};
  auto shrunk = fsA().setattr(*ino, down);
  ASSERT_OK(shrunk);
  EXPECT_EQ(shrunk->size, kChunk + 100);
  auto back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == data.substr(0, kChunk + 100));

  fs::SetAttr up{.setSize = true, .size = 4 * kChunk};
  auto grown = fsA().setattr(*ino, up);
  ASSERT_OK(grown);
  EXPECT_EQ(grown->size, 4u * kChunk);
  back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  std::string expected = data.substr(0, kChunk + 100) + zeros(3 * kChunk - 100);
  EXPECT_TRUE(*back == expected);

  // The same through another node, which only has the store.
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "trunc");
  ASSERT_OK(found);
  EXPECT_EQ(found->size, 4u * kChunk);
  auto cold = readFile(*other->fs, found->ino);
  ASSERT_OK(cold);
  EXPECT_TRUE(*cold == expected);
}

TEST_F(FilesystemTest, TruncateOfAFileWithUnflushedWrites) {
  auto created = fsA().create(kRootIno, "busy", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, file] = *created;
  const std::string data = randomBytes(2 * kChunk + 10, 10);
  ASSERT_OK(fsA().write(*file, 0, data));
  ASSERT_OK(fsA().setattr(inode.ino, fs::SetAttr{.setSize = true, .size = 1000}));
  ASSERT_OK(fsA().write(*file, 5000, "after"));  // the hole [1000, 5000) reads as zeros
  std::string expected = data.substr(0, 1000) + zeros(4000) + "after";
  auto local = fsA().read(*file, 0, 1 << 20);
  ASSERT_OK(local);
  EXPECT_TRUE(*local == expected);
  ASSERT_OK(fsA().release(std::move(file)));
  auto back = readFile(fsA(), inode.ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == expected);
}

TEST_F(FilesystemTest, OpenWithOTruncEmptiesTheFile) {
  auto ino = writeFile(fsA(), kRootIno, "t", randomBytes(2 * kChunk, 11));
  ASSERT_OK(ino);
  bool keep = false;
  auto file = fsA().open(*ino, O_WRONLY | O_TRUNC, &keep);
  ASSERT_OK(file);
  auto attrs = fsA().getattr(*ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, 0u);
  ASSERT_OK(fsA().write(**file, 0, "new"));
  ASSERT_OK(fsA().release(std::move(*file)));
  auto back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_EQ(*back, "new");

  // O_TRUNC alone (nothing written) commits the truncation too.
  file = fsA().open(*ino, O_RDWR | O_TRUNC, &keep);
  ASSERT_OK(file);
  ASSERT_OK(fsA().release(std::move(*file)));
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "t");
  ASSERT_OK(found);
  EXPECT_EQ(found->size, 0u);
  // ... but not on a read-only open.
  ASSERT_OK(writeFile(fsA(), kRootIno, "t", "kept"));
  file = fsA().open(*ino, O_RDONLY | O_TRUNC, &keep);
  ASSERT_OK(file);
  ASSERT_OK(fsA().release(std::move(*file)));
  back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_EQ(*back, "kept");
}

TEST_F(FilesystemTest, AppendWritesAtTheEndWhateverTheOffset) {
  auto ino = writeFile(fsA(), kRootIno, "log", "one\n");
  ASSERT_OK(ino);
  bool keep = false;
  auto a = fsA().open(*ino, O_WRONLY | O_APPEND, &keep);
  auto b = fsA().open(*ino, O_WRONLY | O_APPEND, &keep);
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_OK(fsA().write(**a, 0, "two\n"));
  ASSERT_OK(fsA().write(**b, 0, "three\n"));
  ASSERT_OK(fsA().write(**a, 1, "four\n"));
  ASSERT_OK(fsA().release(std::move(*a)));
  ASSERT_OK(fsA().release(std::move(*b)));
  auto back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_EQ(*back, "one\ntwo\nthree\nfour\n");

  // Appends past a chunk boundary.
  auto c = fsA().open(*ino, O_WRONLY | O_APPEND, &keep);
  ASSERT_OK(c);
  const std::string big = randomBytes(kChunk + 7, 12);
  ASSERT_OK(writeAll(fsA(), **c, 0, big));
  ASSERT_OK(fsA().write(**c, 0, "end"));
  ASSERT_OK(fsA().release(std::move(*c)));
  back = readFile(fsA(), *ino);
  ASSERT_OK(back);
  EXPECT_TRUE(*back == "one\ntwo\nthree\nfour\n" + big + "end");
}

TEST_F(FilesystemTest, UnflushedDataIsSeenByItsWriterAndOtherHandlesOfTheNode) {
  auto ino = writeFile(fsA(), kRootIno, "shared", "old content");
  ASSERT_OK(ino);
  bool keep = false;
  auto early = fsA().open(*ino, O_RDONLY, &keep);  // opened before the write
  ASSERT_OK(early);
  auto writer = fsA().open(*ino, O_RDWR, &keep);
  ASSERT_OK(writer);
  const std::string data = randomBytes(kChunk + 500, 13);
  ASSERT_OK(writeAll(fsA(), **writer, 0, data));
  auto own = fsA().read(**writer, 0, 1 << 20);
  ASSERT_OK(own);
  EXPECT_TRUE(*own == data);
  auto seen = fsA().read(**early, 0, 1 << 20);
  ASSERT_OK(seen);
  EXPECT_TRUE(*seen == data);
  auto late = fsA().open(*ino, O_RDONLY, &keep);  // opened after it
  ASSERT_OK(late);
  seen = fsA().read(**late, kChunk, 1000);
  ASSERT_OK(seen);
  EXPECT_TRUE(*seen == data.substr(kChunk, 1000));
  auto attrs = fsA().getattr(*ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->size, data.size());

  // Committed and closed: the readers still see it.
  ASSERT_OK(fsA().release(std::move(*writer)));
  seen = fsA().read(**early, 0, 1 << 20);
  ASSERT_OK(seen);
  EXPECT_TRUE(*seen == data);
  ASSERT_OK(fsA().release(std::move(*early)));
  ASSERT_OK(fsA().release(std::move(*late)));
}

// FUSE runs requests on many threads: writes to one file, from several threads at once, in
// random order (so that slots are uploaded while others still fill), are all kept.
TEST_F(FilesystemTest, ConcurrentWritesToOneFileAreAllKept) {
  constexpr int kThreads = 4;
  constexpr std::size_t kBlock = 4096;
  constexpr std::size_t kBlocks = 8 * kChunk / kBlock;
  const std::string data = randomBytes(kBlocks * kBlock, 22);
  auto created = fsA().create(kRootIno, "f", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  auto& [inode, handle] = *created;
  auto& file = handle;  // a lambda cannot capture a structured binding (clang 14)
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::size_t> blocks;
      for (std::size_t b = t; b < kBlocks; b += kThreads) blocks.push_back(b);
      std::shuffle(blocks.begin(), blocks.end(), std::mt19937_64(t));
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        const std::size_t at = blocks[i] * kBlock;
        EXPECT_OK(fsA().write(*file, at, std::string_view(data).substr(at, kBlock)));
        if (t == 0 && i % 64 == 63) {
          EXPECT_OK(fsA().flush(*file));  // commits meanwhile
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  auto local = fsA().read(*file, 0, 1 << 30);
  ASSERT_OK(local);
  EXPECT_TRUE(*local == data);
  ASSERT_OK(fsA().release(std::move(file)));
  auto stored = readOnNewNode("f");
  ASSERT_OK(stored);
  EXPECT_TRUE(*stored == data);
}

TEST_F(FilesystemTest, CreateOfAnExistingName) {
  ASSERT_OK(writeFile(fsA(), kRootIno, "x", "content"));
  auto excl = fsA().create(kRootIno, "x", 0644, O_CREAT | O_EXCL | O_WRONLY, {});
  EXPECT_EQ(errnoOf(excl), EEXIST);
  auto reopened = fsA().create(kRootIno, "x", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(reopened);
  auto data = fsA().read(*reopened->second, 0, 100);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "content");
  ASSERT_OK(fsA().release(std::move(reopened->second)));
}

}  // namespace
}  // namespace tierfs::testing
