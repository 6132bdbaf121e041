// fsck and rename intent recovery over a DirStore: volumes damaged by hand, each kind of damage
// found, --repair fixing what it claims (a second check is then clean), nothing referenced ever
// removed, recent orphans left alone, and interrupted renames rolled forward or back.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "backends/DirStore.h"
#include "backends/SyncStore.h"
#include "cache/ChunkCache.h"
#include "cache/ChunkKey.h"
#include "fs/ChunkMap.h"
#include "fs/Filesystem.h"
#include "fs/Fsck.h"
#include "tests/support/Assertions.h"
#include "tests/support/TempDir.h"

namespace tierfs::fs {
namespace {

using backends::SyncStore;
using backends::WriteOp;
using cache::ChunkKey;
using State = FsckFinding::State;
using testing::TempDir;

constexpr std::uint32_t kChunk = 64 << 10;
const Caller kUser{1000, 1000};

std::string pattern(std::size_t n, char seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7 + i / 251);
  return s;
}

class FsckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = backends::DirStore::open({.root = dir_.path() / "store", .durable = false});
    ASSERT_OK(store);
    store_ = std::move(*store);
    ASSERT_OK(Volume::create(*store_, {.chunkSize = kChunk, .codec = cache::Codec::kNone}, false));
    auto volume = Volume::open(*store_);
    ASSERT_OK(volume);
    volume_ = std::move(*volume);
    cache_ = cache::makeMemoryChunkCache(*store_, {});
    // Superseded chunks stay until the Filesystem goes, so that tests see them as orphans.
    fs_ = std::make_unique<Filesystem>(*volume_, *cache_,
                                       FsOptions{.gcDelay = std::chrono::hours(1)});
  }

  // A fresh Filesystem over the same volume: what a new mount sees.
  void remount() {
    fs_.reset();
    fs_ = std::make_unique<Filesystem>(*volume_, *cache_, FsOptions{});
  }

  SyncStore sync() { return SyncStore(*store_); }

  Inode mkdir(Ino parent, const std::string& name) {
    auto r = fs_->mkdir(parent, name, 0755, kUser);
    EXPECT_OK(r);
    return r ? *r : Inode{};
  }

  Inode writeFile(Ino parent, const std::string& name, const std::string& data) {
    auto created = fs_->create(parent, name, 0644, O_RDWR, kUser);
    EXPECT_OK(created);
    if (!created) return {};
    auto& [inode, file] = *created;
    EXPECT_OK(fs_->write(*file, 0, data));
    EXPECT_OK(fs_->release(std::move(file)));
    return *dentry(parent, name);
  }

  std::optional<Inode> dentry(Ino parent, const std::string& name) {
    auto d = volume_->readDentry(Location::of(parent, name));
    EXPECT_OK(d);
    if (!d || !*d) return std::nullopt;
    return (*d)->inode;
  }
  std::string encoded(Ino parent, const std::string& name) {
    auto d = volume_->readDentry(Location::of(parent, name));
    EXPECT_OK(d);
    return d && *d ? (*d)->encoded : "";
  }

  // The content of the file at `path`, looked up name by name from the root ("" when absent).
  std::string readPath(const std::string& path) {
    Ino at = kRootIno;
    Inode inode;
    std::size_t start = 1;
    while (start <= path.size()) {
      std::size_t slash = path.find('/', start);
      if (slash == std::string::npos) slash = path.size();
      auto found = fs_->lookup(at, path.substr(start, slash - start));
      EXPECT_OK(found) << path;
      if (!found) return "";
      inode = *found;
      at = inode.ino;
      start = slash + 1;
    }
    auto data = fs_->readInode(inode.ino, 0, inode.size);
    EXPECT_OK(data);
    return data ? data->toString() : std::string();
  }

  std::set<std::string> objects() {
    std::set<std::string> out;
    std::string cursor;
    for (;;) {
      auto page = sync().listObjects(cursor, 100);
      EXPECT_OK(page);
      if (!page) return out;
      out.insert(page->names.begin(), page->names.end());
      if (!page->more) return out;
      cursor = page->nextCursor;
    }
  }

  bool exists(const std::string& oid) { return sync().stat(oid).has_value(); }

  // The chunk objects every reachable file refers to, and how often each inode has an entry.
  void referenced(Ino dir, std::set<std::string>& chunks, std::map<Ino, int>& inodes) {
    auto page = volume_->listDir(dir, "", 10000);
    ASSERT_OK(page);
    ChunkMap map(kChunk);
    for (const auto& [name, d] : page->entries) {
      ++inodes[d.inode.ino];
      if (d.inode.isDir()) referenced(d.inode.ino, chunks, inodes);
      for (const PieceId& p : map.pieces(d.inode.extents)) {
        chunks.insert(ChunkKey{d.inode.ino, p.version, p.piece}.objectName());
      }
    }
  }

  // Everything looks a day old to fsck unless `now` is the real clock.
  FsckReport check(bool repair, bool deep = false, bool realClock = false) {
    FsckOptions options;
    options.repair = repair;
    options.deep = deep;
    options.nowSec = realClock ? 0 : Timestamp::now().sec + 86400;
    options.pageSize = 7;  // many pages even in small volumes
    auto report = checkVolume(*volume_, options);
    EXPECT_OK(report);
    return report ? std::move(*report) : FsckReport{};
  }

  static std::vector<FsckFinding> of(const FsckReport& r, FindingKind kind) {
    std::vector<FsckFinding> out;
    for (const auto& f : r.findings) {
      if (f.kind == kind) out.push_back(f);
    }
    return out;
  }

  static std::string describe(const FsckReport& r) {
    std::string s;
    for (const auto& f : r.findings) {
      s += fmt::format("[{} {}] {} ({}): {}\n", stateName(f.state), kindName(f.kind), f.object,
                       f.path, f.detail);
    }
    return s;
  }

  void expectClean() {
    FsckReport again = check(false);
    EXPECT_EQ(again.problems(), 0u) << describe(again);
    for (const auto& f : again.findings) {
      EXPECT_NE(f.state, State::kFound) << describe(again);
    }
  }

  TempDir dir_;
  std::unique_ptr<backends::ObjectStore> store_;
  std::unique_ptr<Volume> volume_;
  std::unique_ptr<cache::ChunkCache> cache_;
  std::unique_ptr<Filesystem> fs_;
};

// ---------------------------------------------------------------- a healthy volume

TEST_F(FsckTest, HealthyVolumeIsClean) {
  Inode a = mkdir(kRootIno, "a");
  Inode b = mkdir(a.ino, "b");
  writeFile(kRootIno, "top", pattern(3 * kChunk + 100, 'x'));
  writeFile(b.ino, "deep", pattern(10, 'y'));
  writeFile(a.ino, "empty", "");
  for (int i = 0; i < 20; ++i) writeFile(b.ino, fmt::format("f{}", i), pattern(100 + i, 'z'));
  ASSERT_OK(fs_->symlink(a.ino, "link", "../top", kUser));
  remount();
  FsckReport r = check(false, /*deep=*/true);
  EXPECT_TRUE(r.findings.empty()) << describe(r);
  EXPECT_EQ(r.directories, 3u);
  EXPECT_EQ(r.files, 23u);
  EXPECT_EQ(r.symlinks, 1u);
  EXPECT_EQ(r.chunksReferenced, 4u + 1 + 20);
  EXPECT_EQ(r.chunksVerified, r.chunksReferenced);
  EXPECT_EQ(r.orphanChunks, 0u);
  FsckReport repaired = check(true, true);
  EXPECT_TRUE(repaired.findings.empty()) << describe(repaired);
}

// ---------------------------------------------------------------- orphans

TEST_F(FsckTest, OrphanChunksAreRemovedAndReferencedOnesNeverAre) {
  Inode d = mkdir(kRootIno, "d");
  writeFile(d.ino, "kept", pattern(2 * kChunk + 5, 'k'));
  // An overwrite commits new chunks; the old ones wait for the (long) gc delay: orphans.
  auto opened = fs_->lookup(d.ino, "kept");
  ASSERT_OK(opened);
  bool keep = false;
  auto file = fs_->open(opened->ino, O_RDWR, &keep);
  ASSERT_OK(file);
  const std::string second = pattern(2 * kChunk + 5, 'q');
  ASSERT_OK(fs_->write(**file, 0, second));
  ASSERT_OK(fs_->release(std::move(*file)));
  // An upload whose file was never created.
  ASSERT_OK(sync().writeFull(ChunkKey{0x377, 0x99, 0}.objectName(),
                             *cache::encodeChunk("lost", {.codec = cache::Codec::kNone})));

  FsckReport r = check(false);
  auto orphans = of(r, FindingKind::kOrphanChunk);
  ASSERT_EQ(orphans.size(), 2u) << describe(r);  // one group per file version
  EXPECT_EQ(r.orphanChunks, 3u + 1);
  for (const auto& f : orphans) EXPECT_EQ(f.state, State::kFound);
  EXPECT_EQ(r.problems(), 2u);

  std::set<std::string> refs;
  std::map<Ino, int> inodes;
  referenced(kRootIno, refs, inodes);
  const auto before = objects();
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.repaired(), 2u) << describe(fixed);
  EXPECT_EQ(fixed.problems(), 0u) << describe(fixed);
  const auto after = objects();
  EXPECT_EQ(before.size() - after.size(), 4u);
  for (const auto& oid : refs) EXPECT_TRUE(after.contains(oid)) << oid;
  EXPECT_FALSE(after.contains(ChunkKey{0x377, 0x99, 0}.objectName()));
  expectClean();
  remount();
  EXPECT_EQ(readPath("/d/kept"), second);
}

TEST_F(FsckTest, RecentOrphansAreLeftAlone) {
  const std::string oid = ChunkKey{0x355, 0x10, 3}.objectName();
  ASSERT_OK(sync().writeFull(oid, *cache::encodeChunk("upload", {.codec = cache::Codec::kNone})));
  ASSERT_OK(volume_->createDirObject(0x366));  // a mkdir that has not added its entry yet
  FsckReport r = check(true, false, /*realClock=*/true);
  auto chunks = of(r, FindingKind::kOrphanChunk);
  auto dirs = of(r, FindingKind::kUnreachableDir);
  ASSERT_EQ(chunks.size(), 1u) << describe(r);
  ASSERT_EQ(dirs.size(), 1u) << describe(r);
  EXPECT_EQ(chunks[0].state, State::kRecent);
  EXPECT_EQ(dirs[0].state, State::kRecent);
  EXPECT_NE(chunks[0].detail.find("recent, left alone"), std::string::npos);
  EXPECT_EQ(r.problems(), 0u);
  EXPECT_TRUE(exists(oid));
  EXPECT_TRUE(exists(dirObject(0x366)));
  // Once old enough, they go.
  FsckReport later = check(true);
  EXPECT_EQ(later.repaired(), 2u) << describe(later);
  EXPECT_FALSE(exists(oid));
  EXPECT_FALSE(exists(dirObject(0x366)));
  expectClean();
}

TEST_F(FsckTest, EmptyUnreachableDirectoryObjectsAreRemoved) {
  // An rmdir that crashed after removing the entry: the object is sealed and empty.
  Inode gone = mkdir(kRootIno, "gone");
  ASSERT_OK(volume_->sealEmptyDir(gone.ino));
  ASSERT_OK(volume_->updateDir(dirObject(kRootIno), {{"gone", encoded(kRootIno, "gone"), ""}}));
  FsckReport r = check(false);
  auto dirs = of(r, FindingKind::kUnreachableDir);
  ASSERT_EQ(dirs.size(), 1u) << describe(r);
  EXPECT_EQ(dirs[0].object, dirObject(gone.ino));
  EXPECT_NE(dirs[0].detail.find("unfinished rmdir"), std::string::npos) << dirs[0].detail;
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.repaired(), 1u) << describe(fixed);
  EXPECT_FALSE(exists(dirObject(gone.ino)));
  expectClean();
}

TEST_F(FsckTest, UnreachableDirectoryWithEntriesIsReconnectedUnderLostAndFound) {
  Inode x = mkdir(kRootIno, "x");
  Inode y = mkdir(x.ino, "y");
  const std::string data = pattern(kChunk + 17, 'L');
  writeFile(y.ino, "file", data);
  Inode inner = mkdir(kRootIno, "inner");  // an unreachable object inside another: not a top
  ASSERT_OK(volume_->updateDir(dirObject(x.ino), {{"inner", "", encoded(kRootIno, "inner")}}));
  ASSERT_OK(volume_->updateDir(dirObject(kRootIno), {{"inner", encoded(kRootIno, "inner"), ""}}));
  // The entry of x is lost (as if its dentry were destroyed).
  ASSERT_OK(volume_->updateDir(dirObject(kRootIno), {{"x", encoded(kRootIno, "x"), ""}}));
  const auto before = objects();

  FsckReport r = check(false);
  auto dirs = of(r, FindingKind::kUnreachableDir);
  ASSERT_EQ(dirs.size(), 1u) << describe(r);  // x only: y and inner are inside it
  EXPECT_EQ(dirs[0].object, dirObject(x.ino));
  EXPECT_EQ(dirs[0].state, State::kFound);
  EXPECT_TRUE(of(r, FindingKind::kOrphanChunk).empty()) << describe(r);  // the file's chunks

  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.problems(), 0u) << describe(fixed);
  for (const auto& oid : before) EXPECT_TRUE(exists(oid)) << oid;  // nothing removed
  remount();
  auto lf = fs_->lookup(kRootIno, "lost+found");
  ASSERT_OK(lf);
  EXPECT_EQ(lf->mode, 0700u);
  auto back = fs_->lookup(lf->ino, dirObject(x.ino));
  ASSERT_OK(back);
  EXPECT_EQ(back->ino, x.ino);
  EXPECT_EQ(readPath(fmt::format("/lost+found/{}/y/file", dirObject(x.ino))), data);
  EXPECT_TRUE(dentry(x.ino, "inner").has_value());
  expectClean();
  (void)inner;
}

// ---------------------------------------------------------------- dangling entries

TEST_F(FsckTest, DirectoryEntryWithoutItsObjectIsRemoved) {
  Inode a = mkdir(kRootIno, "a");
  Inode b = mkdir(a.ino, "b");
  writeFile(a.ino, "stays", "data");
  ASSERT_OK(sync().remove(dirObject(b.ino)));
  FsckReport r = check(false);
  auto missing = of(r, FindingKind::kMissingDirObject);
  ASSERT_EQ(missing.size(), 1u) << describe(r);
  EXPECT_EQ(missing[0].path, "/a/b");
  EXPECT_EQ(missing[0].object, dirObject(b.ino));
  EXPECT_EQ(missing[0].state, State::kFound);
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.repaired(), 1u) << describe(fixed);
  EXPECT_FALSE(dentry(a.ino, "b").has_value());
  EXPECT_TRUE(dentry(a.ino, "stays").has_value());
  expectClean();
}

TEST_F(FsckTest, FileWithMissingChunksIsReportedNeverTruncated) {
  Inode f = writeFile(kRootIno, "big", pattern(3 * kChunk, 'b'));
  const std::string gone = ChunkKey{f.ino, f.extents[0].version, 1}.objectName();
  ASSERT_OK(sync().remove(gone));
  for (bool repair : {false, true}) {
    FsckReport r = check(repair);
    auto missing = of(r, FindingKind::kMissingChunk);
    ASSERT_EQ(missing.size(), 1u) << describe(r);
    EXPECT_EQ(missing[0].path, "/big");
    EXPECT_EQ(missing[0].object, gone);
    EXPECT_EQ(missing[0].state, State::kReportOnly);
    EXPECT_EQ(r.problems(), 1u);
  }
  auto after = dentry(kRootIno, "big");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->size, 3u * kChunk);
  EXPECT_EQ(after->extents, f.extents);
}

// ---------------------------------------------------------------- marks, ids, bad entries

TEST_F(FsckTest, StaleRemovingMarkIsCleared) {
  Inode d = mkdir(kRootIno, "d");
  ASSERT_OK(volume_->sealEmptyDir(d.ino));  // an rmdir that crashed before removing the entry
  auto refused = fs_->mkdir(d.ino, "sub", 0755, kUser);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().toErrno(), ENOENT);
  FsckReport recent = check(true, false, /*realClock=*/true);
  auto marks = of(recent, FindingKind::kRemovingMark);
  ASSERT_EQ(marks.size(), 1u) << describe(recent);
  EXPECT_EQ(marks[0].state, State::kRecent);
  FsckReport r = check(false);
  ASSERT_EQ(of(r, FindingKind::kRemovingMark).size(), 1u) << describe(r);
  EXPECT_EQ(of(r, FindingKind::kRemovingMark)[0].path, "/d");
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.repaired(), 1u) << describe(fixed);
  expectClean();
  EXPECT_OK(fs_->mkdir(d.ino, "sub", 0755, kUser));
}

TEST_F(FsckTest, IdAllocatorBehindIsRaised) {
  writeFile(kRootIno, "f", "data");
  ASSERT_OK(sync().mutate(std::string(kVolumeObject),
                          std::move(WriteOp().omapSet(std::string(kNextIdKey), "2"))));
  FsckReport r = check(false);
  ASSERT_EQ(of(r, FindingKind::kIdAllocatorBehind).size(), 1u) << describe(r);
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.repaired(), 1u) << describe(fixed);
  expectClean();
}

TEST_F(FsckTest, UndecodableDentriesAndDuplicatesAreReportedNotTouched) {
  Inode a = mkdir(kRootIno, "a");
  Inode f = writeFile(a.ino, "f", "shared");
  ASSERT_OK(sync().mutate(dirObject(a.ino), std::move(WriteOp().omapSet("junk", "not an inode"))));
  ASSERT_OK(volume_->updateDir(dirObject(kRootIno), {{"twin", "", encoded(a.ino, "f")}}));
  for (bool repair : {false, true}) {
    FsckReport r = check(repair);
    auto bad = of(r, FindingKind::kUndecodableDentry);
    ASSERT_EQ(bad.size(), 1u) << describe(r);
    EXPECT_EQ(bad[0].path, "/a/junk");
    EXPECT_EQ(bad[0].state, State::kReportOnly);
    auto dups = of(r, FindingKind::kDuplicateIno);
    ASSERT_EQ(dups.size(), 1u) << describe(r);
    EXPECT_NE(dups[0].detail.find(fmt::format("inode {:x}", f.ino)), std::string::npos);
    EXPECT_EQ(r.problems(), 2u);
    EXPECT_EQ(r.repaired(), 0u);
  }
  auto junk = sync().omapGet(dirObject(a.ino), {"junk"});
  ASSERT_OK(junk);
  EXPECT_EQ(junk->at("junk"), "not an inode");
  EXPECT_TRUE(dentry(kRootIno, "twin").has_value());
  EXPECT_TRUE(dentry(a.ino, "f").has_value());
}

TEST_F(FsckTest, ForeignObjectsAreNotedAndKept) {
  ASSERT_OK(sync().writeFull("somebody.else", "x"));
  FsckReport r = check(true);
  auto notes = of(r, FindingKind::kForeignObject);
  ASSERT_EQ(notes.size(), 1u) << describe(r);
  EXPECT_EQ(notes[0].state, State::kNote);
  EXPECT_EQ(r.problems(), 0u);
  EXPECT_TRUE(exists("somebody.else"));
}

// ---------------------------------------------------------------- --deep

TEST_F(FsckTest, DeepFindsDamagedAndShortChunks) {
  Inode f = writeFile(kRootIno, "f", pattern(2 * kChunk + 1000, 'd'));
  Inode g = writeFile(kRootIno, "g", pattern(kChunk, 'g'));
  const std::string damaged = ChunkKey{f.ino, f.extents[0].version, 0}.objectName();
  auto frame = sync().read(damaged);
  ASSERT_OK(frame);
  std::string bad = frame->toString();
  bad[bad.size() / 2] ^= 0x20;
  ASSERT_OK(sync().writeFull(damaged, bad));
  const std::string shortened = ChunkKey{g.ino, g.extents[0].version, 0}.objectName();
  ASSERT_OK(sync().writeFull(
      shortened, *cache::encodeChunk(std::string(100, 's'), {.codec = cache::Codec::kNone})));
  FsckReport shallow = check(false);
  EXPECT_TRUE(shallow.findings.empty()) << describe(shallow);
  FsckReport r = check(true, /*deep=*/true);
  auto badChunks = of(r, FindingKind::kBadChunk);
  auto shortChunks = of(r, FindingKind::kShortChunk);
  ASSERT_EQ(badChunks.size(), 1u) << describe(r);
  ASSERT_EQ(shortChunks.size(), 1u) << describe(r);
  EXPECT_EQ(badChunks[0].object, damaged);
  EXPECT_EQ(badChunks[0].path, "/f");
  EXPECT_EQ(shortChunks[0].object, shortened);
  EXPECT_NE(shortChunks[0].detail.find(fmt::format("needs {}", kChunk)), std::string::npos);
  EXPECT_EQ(r.problems(), 2u);
  EXPECT_TRUE(exists(damaged));
  EXPECT_TRUE(exists(shortened));
}

// ---------------------------------------------------------------- interrupted renames

enum class CrashPoint { kIntentOnly, kTargetAdded, kSourceRemoved };

class InterruptedRenameTest : public FsckTest, public ::testing::WithParamInterface<CrashPoint> {
 protected:
  // Does what Filesystem::renameAcross does, up to `crash`: src/f -> dst/g.
  void renameUntil(CrashPoint crash, const std::string& replaced = "",
                   const std::string& owner = "") {
    const std::string source = encoded(src_.ino, "f");
    Inode moved = *dentry(src_.ino, "f");
    moved.ctime = Timestamp::now();
    moved.ctime.sec += 1;
    const std::string movedEnc = encodeInode(moved);
    RenameIntent intent{src_.ino, "f", dst_.ino, "g", movedEnc, replaced, Timestamp::now().sec,
                        owner};
    auto id = volume_->newId();
    ASSERT_OK(id);
    key_ = fmt::format("{:016x}", *id);
    ASSERT_OK(volume_->recordIntent(key_, encodeIntent(intent)));
    if (crash == CrashPoint::kIntentOnly) return;
    ASSERT_OK(volume_->updateDir(dirObject(dst_.ino), {{"g", replaced, movedEnc}}));
    if (crash == CrashPoint::kTargetAdded) return;
    ASSERT_OK(volume_->updateDir(dirObject(src_.ino), {{"f", source, ""}}));
  }

  void SetUp() override {
    FsckTest::SetUp();
    src_ = mkdir(kRootIno, "src");
    dst_ = mkdir(kRootIno, "dst");
    file_ = writeFile(src_.ino, "f", data_);
  }

  // Where the moved file is: exactly once in the namespace.
  void expectOnce(bool forward) {
    std::set<std::string> chunks;
    std::map<Ino, int> inodes;
    referenced(kRootIno, chunks, inodes);
    EXPECT_EQ(inodes[file_.ino], 1);
    auto intents = volume_->listIntents();
    ASSERT_OK(intents);
    EXPECT_TRUE(intents->empty());
    remount();
    if (forward) {
      EXPECT_FALSE(dentry(src_.ino, "f").has_value());
      EXPECT_EQ(readPath("/dst/g"), data_);
    } else {
      EXPECT_FALSE(dentry(dst_.ino, "g").has_value() && dentry(dst_.ino, "g")->ino == file_.ino);
      EXPECT_EQ(readPath("/src/f"), data_);
    }
  }

  Inode src_, dst_, file_;
  std::string key_;
  const std::string data_ = pattern(kChunk + 3, 'r');
};

TEST_P(InterruptedRenameTest, RecoveryRollsForwardOrBack) {
  const CrashPoint crash = GetParam();
  renameUntil(crash);
  std::vector<IntentOutcome> outcomes;
  // A young intent may belong to a live daemon: left alone.
  Status young = recoverRenameIntents(*volume_, std::chrono::seconds(60), &outcomes);
  ASSERT_OK(young);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].action, IntentOutcome::Action::kRecent);
  EXPECT_FALSE(outcomes[0].applied);
  // A dry run says what it would do and changes nothing.
  outcomes.clear();
  const std::int64_t later = Timestamp::now().sec + 120;
  Status dryRun = recoverRenameIntents(*volume_, std::chrono::seconds(60), &outcomes,
                                       {.apply = false, .nowSec = later});
  ASSERT_OK(dryRun);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(outcomes[0].applied);
  EXPECT_EQ(volume_->listIntents()->size(), 1u);

  outcomes.clear();
  Status recovered = recoverRenameIntents(*volume_, std::chrono::seconds(60), &outcomes,
                                          {.apply = true, .nowSec = later});
  ASSERT_OK(recovered);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].applied) << outcomes[0].detail;
  EXPECT_EQ(outcomes[0].key, key_);
  const bool forward = crash != CrashPoint::kIntentOnly;
  EXPECT_EQ(outcomes[0].action,
            forward ? IntentOutcome::Action::kRolledForward : IntentOutcome::Action::kRolledBack)
      << outcomes[0].detail;
  expectOnce(forward);
  expectClean();
}

// A daemon restarted on the node where its predecessor died finishes that one's renames at once,
// instead of serving the moved inode under both names until the intent is a minute old.
TEST_P(InterruptedRenameTest, AYoungIntentWhoseDaemonIsGoneIsRecoveredAtOnce) {
  const CrashPoint crash = GetParam();
  renameUntil(crash, "", "pid=1234 start=5");
  std::vector<IntentOutcome> outcomes;
  auto alive = [](std::string_view) { return Liveness::kAlive; };
  auto unknown = [](std::string_view) { return Liveness::kUnknown; };
  for (auto liveness : {std::function<Liveness(std::string_view)>(alive), {unknown}}) {
    outcomes.clear();
    ASSERT_OK(recoverRenameIntents(*volume_, std::chrono::seconds(60), &outcomes,
                                   {.ownerLiveness = liveness}));
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(outcomes[0].action, IntentOutcome::Action::kRecent);
  }
  std::string asked;
  auto gone = [&](std::string_view owner) {
    asked = owner;
    return Liveness::kGone;
  };
  outcomes.clear();
  ASSERT_OK(
      recoverRenameIntents(*volume_, std::chrono::seconds(60), &outcomes, {.ownerLiveness = gone}));
  EXPECT_EQ(asked, "pid=1234 start=5");
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].applied) << outcomes[0].detail;
  EXPECT_NE(outcomes[0].detail.find("is gone"), std::string::npos) << outcomes[0].detail;
  expectOnce(crash != CrashPoint::kIntentOnly);
  expectClean();
}

TEST_P(InterruptedRenameTest, FsckReportsThenRepairs) {
  const CrashPoint crash = GetParam();
  renameUntil(crash);
  FsckReport r = check(false);
  auto intents = of(r, FindingKind::kRenameIntent);
  ASSERT_EQ(intents.size(), 1u) << describe(r);
  EXPECT_EQ(intents[0].state, State::kFound);
  const bool forward = crash != CrashPoint::kIntentOnly;
  EXPECT_NE(intents[0].detail.find(forward ? "would roll forward" : "would roll back"),
            std::string::npos)
      << intents[0].detail;
  // Both entries hold the file until the source is removed: a duplicate that repair resolves.
  auto dups = of(r, FindingKind::kDuplicateIno);
  ASSERT_EQ(dups.size(), crash == CrashPoint::kTargetAdded ? 1u : 0u) << describe(r);
  for (const auto& d : dups) EXPECT_EQ(d.state, State::kFound) << d.detail;
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.problems(), 0u) << describe(fixed);
  expectOnce(forward);
  expectClean();
}

TEST_P(InterruptedRenameTest, ReplacedFileIsRestoredOrItsChunksCollected) {
  const CrashPoint crash = GetParam();
  const std::string old = pattern(2 * kChunk, 'o');
  Inode victim = writeFile(dst_.ino, "g", old);
  renameUntil(crash, encoded(dst_.ino, "g"));
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.problems(), 0u) << describe(fixed);
  const bool forward = crash != CrashPoint::kIntentOnly;
  expectOnce(forward);
  if (forward) {
    // The replaced file's chunks are garbage now, collected by the same run.
    for (std::uint32_t p = 0; p < 2; ++p) {
      EXPECT_FALSE(exists(ChunkKey{victim.ino, victim.extents[0].version, p}.objectName()));
    }
  } else {
    EXPECT_EQ(readPath("/dst/g"), old);
    EXPECT_EQ(readPath("/src/f"), data_);
  }
  expectClean();
}

TEST_P(InterruptedRenameTest, ReplacedDirectoryIsUnsealedOrDropped) {
  const CrashPoint crash = GetParam();
  // A rename over an empty directory: the rename seals it before writing its intent.
  auto bad = fs_->mkdir(dst_.ino, "g", 0755, kUser);
  ASSERT_OK(bad);
  // A file cannot replace a directory; move a directory instead.
  ASSERT_OK(fs_->unlink(src_.ino, "f"));
  file_ = mkdir(src_.ino, "f");
  ASSERT_OK(volume_->sealEmptyDir(bad->ino));
  renameUntil(crash, encoded(dst_.ino, "g"));
  std::vector<IntentOutcome> outcomes;
  Status recovered = recoverRenameIntents(*volume_, std::chrono::seconds(0), &outcomes,
                                          {.nowSec = Timestamp::now().sec + 10});
  ASSERT_OK(recovered);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].applied) << outcomes[0].detail;
  if (crash == CrashPoint::kIntentOnly) {
    EXPECT_EQ(dentry(dst_.ino, "g")->ino, bad->ino);
    EXPECT_OK(fs_->mkdir(bad->ino, "usable", 0755, kUser));  // no longer sealed
  } else {
    EXPECT_EQ(dentry(dst_.ino, "g")->ino, file_.ino);
    EXPECT_FALSE(exists(dirObject(bad->ino)));
  }
  // The unlinked file's chunks wait for the gc delay: orphans for fsck.
  FsckReport fixed = check(true);
  EXPECT_EQ(fixed.problems(), 0u) << describe(fixed);
  expectClean();
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, InterruptedRenameTest,
                         ::testing::Values(CrashPoint::kIntentOnly, CrashPoint::kTargetAdded,
                                           CrashPoint::kSourceRemoved),
                         [](const auto& info) {
                           switch (info.param) {
                             case CrashPoint::kIntentOnly:
                               return "IntentOnly";
                             case CrashPoint::kTargetAdded:
                               return "TargetAdded";
                             case CrashPoint::kSourceRemoved:
                               return "SourceRemoved";
                           }
                           return "?";
                         });

TEST_F(FsckTest, RenameWhoseEntriesBothChangedIsLeftForAPerson) {
  Inode src = mkdir(kRootIno, "src");
  Inode dst = mkdir(kRootIno, "dst");
  writeFile(src.ino, "f", "one");
  Inode moved = *dentry(src.ino, "f");
  RenameIntent intent{src.ino, "f", dst.ino, "g", encodeInode(moved), "", 1};
  ASSERT_OK(volume_->recordIntent("0000000000000001", encodeIntent(intent)));
  Inode atTarget = moved;
  atTarget.mode = 0600;
  Inode atSource = moved;
  atSource.mode = 0640;
  ASSERT_OK(volume_->updateDir(dirObject(dst.ino), {{"g", "", encodeInode(atTarget)}}));
  ASSERT_OK(volume_->updateDir(dirObject(src.ino),
                               {{"f", encoded(src.ino, "f"), encodeInode(atSource)}}));
  FsckReport r = check(true);
  auto intents = of(r, FindingKind::kRenameIntent);
  ASSERT_EQ(intents.size(), 1u) << describe(r);
  EXPECT_EQ(intents[0].state, State::kReportOnly);
  EXPECT_NE(intents[0].detail.find("both changed"), std::string::npos);
  EXPECT_EQ(volume_->listIntents()->size(), 1u);
  EXPECT_EQ(dentry(src.ino, "f")->mode, 0640u);
  EXPECT_EQ(dentry(dst.ino, "g")->mode, 0600u);
}

TEST_F(FsckTest, RenameWithAnUndecodableEntryIsLeftForAPerson) {
  Inode src = mkdir(kRootIno, "src");
  Inode dst = mkdir(kRootIno, "dst");
  writeFile(src.ino, "f", "one");
  RenameIntent intent{src.ino, "f", dst.ino, "g", encoded(src.ino, "f"), "", 1};
  ASSERT_OK(volume_->recordIntent("0000000000000001", encodeIntent(intent)));
  ASSERT_OK(sync().mutate(dirObject(dst.ino), std::move(WriteOp().omapSet("g", "damaged"))));
  std::vector<IntentOutcome> outcomes;
  Status recovered = recoverRenameIntents(*volume_, std::chrono::seconds(60), &outcomes);
  EXPECT_OK(recovered);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].action, IntentOutcome::Action::kConflict) << outcomes[0].detail;
  EXPECT_FALSE(outcomes[0].applied);
  EXPECT_EQ(volume_->listIntents()->size(), 1u);
  EXPECT_TRUE(dentry(src.ino, "f").has_value());
}

TEST_F(FsckTest, RollForwardKeepsACommitMadeThroughTheSourceEntry) {
  Inode src = mkdir(kRootIno, "src");
  Inode dst = mkdir(kRootIno, "dst");
  writeFile(src.ino, "f", "one");
  Inode moved = *dentry(src.ino, "f");
  RenameIntent intent{src.ino, "f", dst.ino, "g", encodeInode(moved), "", 1};
  ASSERT_OK(volume_->recordIntent("0000000000000001", encodeIntent(intent)));
  ASSERT_OK(volume_->updateDir(dirObject(dst.ino), {{"g", "", encodeInode(moved)}}));
  Inode newer = moved;
  newer.mode = 0600;  // e.g. a chmod through the old name on another node
  ASSERT_OK(
      volume_->updateDir(dirObject(src.ino), {{"f", encoded(src.ino, "f"), encodeInode(newer)}}));
  Status recovered = recoverRenameIntents(*volume_, std::chrono::seconds(60));
  ASSERT_OK(recovered);
  EXPECT_FALSE(dentry(src.ino, "f").has_value());
  EXPECT_EQ(dentry(dst.ino, "g")->mode, 0600u);
  EXPECT_TRUE(volume_->listIntents()->empty());
}

TEST_F(FsckTest, UndecodableIntentIsReportedAndKept) {
  ASSERT_OK(volume_->recordIntent("0000000000000001", "garbage"));
  FsckReport r = check(true);
  auto bad = of(r, FindingKind::kUndecodableIntent);
  ASSERT_EQ(bad.size(), 1u) << describe(r);
  EXPECT_EQ(bad[0].state, State::kReportOnly);
  EXPECT_EQ(volume_->listIntents()->size(), 1u);
}

}  // namespace
}  // namespace tierfs::fs
