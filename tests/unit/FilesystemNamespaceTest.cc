// fs::Filesystem names and attributes: directories, unlink, rename, symlinks, xattrs, readdir
// paging and statfs.
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <sys/xattr.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "tests/unit/FilesystemFixture.h"

namespace tierfs::testing {
namespace {

constexpr std::string_view kStoredSize = "user.tierfs.stored_size";

TEST_F(FilesystemTest, MkdirAndRmdir) {
  auto dir = fsA().mkdir(kRootIno, "d", 0750, {.uid = 7, .gid = 8});
  ASSERT_OK(dir);
  EXPECT_TRUE(dir->isDir());
  EXPECT_EQ(dir->mode, 0750u);
  EXPECT_EQ(dir->uid, 7u);
  EXPECT_EQ(dir->gid, 8u);
  EXPECT_EQ(errnoOf(fsA().mkdir(kRootIno, "d", 0755, {})), EEXIST);
  auto found = fsA().lookup(kRootIno, "d");
  ASSERT_OK(found);
  EXPECT_EQ(found->ino, dir->ino);

  auto sub = fsA().mkdir(dir->ino, "sub", 0755, {});
  ASSERT_OK(sub);
  ASSERT_OK(writeFile(fsA(), dir->ino, "file", "x"));
  EXPECT_EQ(errnoOf(fsA().rmdir(kRootIno, "d")), ENOTEMPTY);
  EXPECT_EQ(errnoOf(fsA().rmdir(dir->ino, "file")), ENOTDIR);
  EXPECT_EQ(errnoOf(fsA().unlink(dir->ino, "sub")), EISDIR);
  ASSERT_OK(fsA().unlink(dir->ino, "file"));
  EXPECT_EQ(errnoOf(fsA().rmdir(kRootIno, "d")), ENOTEMPTY);  // sub is still there
  ASSERT_OK(fsA().rmdir(dir->ino, "sub"));
  // The refused rmdir left the directory usable.
  ASSERT_OK(writeFile(fsA(), dir->ino, "again", "y"));
  ASSERT_OK(fsA().unlink(dir->ino, "again"));
  ASSERT_OK(fsA().rmdir(kRootIno, "d"));
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "d")), ENOENT);
  EXPECT_EQ(errnoOf(fsA().rmdir(kRootIno, "d")), ENOENT);
  EXPECT_EQ(errnoOf(fsA().mkdir(dir->ino, "x", 0755, {})), ENOENT);  // its parent is gone
}

TEST_F(FilesystemTest, BadNamesAreRefused) {
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, std::string(256, 'n'))), ENAMETOOLONG);
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "missing")), ENOENT);
  auto file = writeFile(fsA(), kRootIno, "plain", "");
  ASSERT_OK(file);
  EXPECT_EQ(errnoOf(fsA().lookup(*file, "x")), ENOTDIR);
  EXPECT_EQ(errnoOf(fsA().mkdir(kRootIno, "a/b", 0755, {})), EINVAL);
  bool keep = false;
  EXPECT_EQ(errnoOf(fsA().open(kRootIno, O_RDONLY, &keep)), EISDIR);
}

TEST_F(FilesystemTest, UnlinkRemovesTheName) {
  auto ino = writeFile(fsA(), kRootIno, "f", "data");
  ASSERT_OK(ino);
  ASSERT_OK(fsA().unlink(kRootIno, "f"));
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "f")), ENOENT);
  EXPECT_EQ(errnoOf(fsA().unlink(kRootIno, "f")), ENOENT);
  // The name can be used again, for a new inode.
  auto again = writeFile(fsA(), kRootIno, "f", "new");
  ASSERT_OK(again);
  EXPECT_NE(*again, *ino);
  auto data = readFile(fsA(), *again);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "new");
}

// unlink and rename of names this node knows (the kernel looks a name up before either) send
// only their guarded updates: no read of the dentries first.
TEST_F(FilesystemTest, UnlinkAndRenameOfKnownNamesReadNothing) {
  auto node = startNode({.attrTimeout = std::chrono::seconds(60)});
  ASSERT_NE(node, nullptr);
  fs::Filesystem& f = *node->fs;
  auto dir = f.mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(dir);
  auto a = writeFile(f, dir->ino, "a", "content of a");
  auto b = writeFile(f, dir->ino, "b", "content of b");
  ASSERT_OK(a);
  ASSERT_OK(b);
  const std::vector<std::pair<std::string, std::function<Status()>>> changes = {
      {"rename to a new name", [&] { return f.rename(dir->ino, "a", dir->ino, "c", 0); }},
      {"rename over a file", [&] { return f.rename(dir->ino, "c", dir->ino, "b", 0); }},
      {"rename across", [&] { return f.rename(dir->ino, "b", kRootIno, "e", 0); }},
      {"unlink", [&] { return f.unlink(kRootIno, "e"); }},
  };
  for (const auto& [what, change] : changes) {
    store_->reset();
    ASSERT_OK(change()) << what;
    EXPECT_EQ(store_->counts().omapGets, 0u) << what;
    EXPECT_EQ(store_->counts().omapLists, 0u) << what;
  }
  auto other = startNode({});
  ASSERT_NE(other, nullptr);
  ASSERT_OK(other->fs->lookup(kRootIno, "d"));
  for (const auto& [parent, name] : std::vector<std::pair<Ino, std::string>>{
           {dir->ino, "a"}, {dir->ino, "b"}, {dir->ino, "c"}, {kRootIno, "e"}}) {
    EXPECT_EQ(errnoOf(other->fs->lookup(parent, name)), ENOENT) << name;
  }
  ASSERT_OK(f.flushAll());  // runs the removals of the replaced and the unlinked file's chunks
  EXPECT_EQ(chunksSettleTo(*a, {}), std::set<cache::ChunkKey>{});
  EXPECT_EQ(chunksSettleTo(*b, {}), std::set<cache::ChunkKey>{});
}

// What this node knows of a name may be stale: another node rewrote, removed or created it. The
// guards catch every such guess, and the names are read again: the outcome is the one the store
// holds, never the one this node remembered.
TEST_F(FilesystemTest, UnlinkAndRenameOfNamesChangedElsewhereReadThemAgain) {
  auto node = startNode({.attrTimeout = std::chrono::seconds(60)});
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(node, nullptr);
  ASSERT_NE(other, nullptr);
  fs::Filesystem& f = *node->fs;
  fs::Filesystem& g = *other->fs;
  for (const char* name : {"rewritten", "removed", "gone", "s1", "s2", "s3"}) {
    ASSERT_OK(writeFile(f, kRootIno, name, std::string("old ") + name));
  }

  // Rewritten elsewhere, then unlinked here: the new content's dentry is the one removed.
  auto rewritten = writeFile(g, kRootIno, "rewritten", "new content");
  ASSERT_OK(rewritten);
  ASSERT_OK(f.unlink(kRootIno, "rewritten"));
  EXPECT_EQ(errnoOf(g.lookup(kRootIno, "rewritten")), ENOENT);
  ASSERT_OK(g.flushAll());  // the rewrite's removal of the old chunks
  ASSERT_OK(f.flushAll());  // the unlink's removal of the new ones
  EXPECT_EQ(chunksSettleTo(*rewritten, {}), std::set<cache::ChunkKey>{});

  // Removed elsewhere: unlink and rename here find it gone.
  ASSERT_OK(g.unlink(kRootIno, "removed"));
  EXPECT_EQ(errnoOf(f.unlink(kRootIno, "removed")), ENOENT);
  ASSERT_OK(g.unlink(kRootIno, "gone"));
  EXPECT_EQ(errnoOf(f.rename(kRootIno, "gone", kRootIno, "elsewhere", 0)), ENOENT);
  EXPECT_EQ(errnoOf(g.lookup(kRootIno, "elsewhere")), ENOENT);

  // A target this node does not know, created elsewhere: RENAME_NOREPLACE refuses it, a plain
  // rename replaces it.
  ASSERT_OK(writeFile(g, kRootIno, "t", "made elsewhere"));
  EXPECT_EQ(errnoOf(f.rename(kRootIno, "s1", kRootIno, "t", RENAME_NOREPLACE)), EEXIST);
  ASSERT_OK(f.rename(kRootIno, "s1", kRootIno, "t", 0));
  auto t = g.lookup(kRootIno, "t");
  ASSERT_OK(t);
  auto data = readFile(g, t->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "old s1");

  // A target this node knows, removed elsewhere: RENAME_NOREPLACE goes through.
  ASSERT_OK(g.unlink(kRootIno, "s3"));
  ASSERT_OK(f.rename(kRootIno, "s2", kRootIno, "s3", RENAME_NOREPLACE));
  auto s3 = g.lookup(kRootIno, "s3");
  ASSERT_OK(s3);
  data = readFile(g, s3->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "old s2");
  EXPECT_EQ(errnoOf(g.lookup(kRootIno, "s2")), ENOENT);
}

// A burst of lookups in a directory lists it whole (DentryCache); its subdirectories are then found
// in that listing too, and only their times, which live in their own objects, are read. They are
// the store's: a change made in a subdirectory after the listing shows in its times.
TEST_F(FilesystemTest, ASubdirectoryIsFoundInItsParentsListingWithFreshTimes) {
  auto p = fsA().mkdir(kRootIno, "p", 0755, {});
  ASSERT_OK(p);
  for (const char* name : {"c0", "c1", "c2"}) ASSERT_OK(fsA().mkdir(p->ino, name, 0755, {}));
  auto node = startNode({.attrTimeout = std::chrono::seconds(60)});
  ASSERT_NE(node, nullptr);
  fs::Filesystem& f = *node->fs;
  ASSERT_OK(f.lookup(kRootIno, "p"));
  ASSERT_OK(f.lookup(p->ino, "c0"));  // a first miss: that name alone
  ASSERT_OK(f.lookup(p->ino, "c1"));  // a second: the directory, listed
  auto c2 = fsA().lookup(p->ino, "c2");
  ASSERT_OK(c2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // so that the times move
  ASSERT_OK(writeFile(fsA(), c2->ino, "new", "x"));           // c2 changes after the listing
  store_->reset();
  auto seen = f.lookup(p->ino, "c2");
  ASSERT_OK(seen);
  EXPECT_EQ(store_->counts().omapGets, 0u);
  EXPECT_EQ(store_->counts().omapLists, 0u);
  EXPECT_EQ(store_->counts().xattrReads, 1u);  // its times
  EXPECT_EQ(seen->ino, c2->ino);
  EXPECT_TRUE(seen->isDir());
  auto fresh = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(fresh, nullptr);
  ASSERT_OK(fresh->fs->lookup(kRootIno, "p"));
  auto truth = fresh->fs->lookup(p->ino, "c2");
  ASSERT_OK(truth);
  EXPECT_GT(truth->mtime, c2->mtime);
  EXPECT_EQ(seen->mtime, truth->mtime);
}

// A directory's listing past attr_timeout is renewed by one stat while the directory object has
// not changed; once another node changed an entry (a file rewritten), it is not: the lookup finds
// the new dentry, never the one listed before.
TEST_F(FilesystemTest, AnExpiredListingIsRenewedOnlyWhileTheDirectoryIsUnchanged) {
  constexpr auto kTtl = std::chrono::milliseconds(300);
  auto dir = fsA().mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(dir);
  for (const char* name : {"a", "b", "c", "e"}) ASSERT_OK(writeFile(fsA(), dir->ino, name, name));
  auto node = startNode({.attrTimeout = kTtl});
  ASSERT_NE(node, nullptr);
  fs::Filesystem& f = *node->fs;
  ASSERT_OK(f.lookup(kRootIno, "d"));
  ASSERT_OK(f.lookup(dir->ino, "a"));  // a first miss
  ASSERT_OK(f.lookup(dir->ino, "b"));  // a second: listed
  std::this_thread::sleep_for(kTtl + std::chrono::milliseconds(20));
  store_->reset();
  auto c = f.lookup(dir->ino, "c");
  ASSERT_OK(c);
  EXPECT_EQ(store_->counts().stats, 1u);  // the directory's version, unchanged
  EXPECT_EQ(store_->counts().omapGets, 0u);
  EXPECT_EQ(store_->counts().omapLists, 0u);

  ASSERT_OK(writeFile(fsA(), dir->ino, "e", "rewritten elsewhere"));
  std::this_thread::sleep_for(kTtl + std::chrono::milliseconds(20));
  store_->reset();
  auto e = f.lookup(dir->ino, "e");
  ASSERT_OK(e);
  EXPECT_EQ(store_->counts().stats, 1u);
  EXPECT_EQ(store_->counts().omapGets, 1u);  // the listing was dropped: the name is read
  EXPECT_EQ(e->size, std::string("rewritten elsewhere").size());
  auto data = readFile(f, e->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "rewritten elsewhere");
}

// After this node adds, renames or removes an entry, the directory's times are the ones it wrote:
// the getattr the kernel sends for the directory after each change reads nothing from the store
// (a cp or tar into a directory paid two reads a file for it), and another node reads the same
// times from the store.
TEST_F(FilesystemTest, ADirectoryChangedHereNeedsNoReadForItsTimes) {
  auto node = startNode({.attrTimeout = std::chrono::seconds(60)});
  ASSERT_NE(node, nullptr);
  fs::Filesystem& f = *node->fs;
  auto dir = f.mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(dir);
  const std::vector<std::pair<std::string, std::function<Status()>>> changes = {
      {"create", [&] { return statusOf(writeFile(f, dir->ino, "f", "x")); }},
      {"rename", [&] { return f.rename(dir->ino, "f", dir->ino, "g", 0); }},
      {"unlink", [&] { return f.unlink(dir->ino, "g"); }},
  };
  fs::Timestamp last = dir->mtime;
  for (const auto& [what, change] : changes) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // so that the times move
    ASSERT_OK(change()) << what;
    store_->reset();
    auto attrs = f.getattr(dir->ino);
    ASSERT_OK(attrs) << what;
    EXPECT_EQ(store_->counts().omapGets, 0u) << what;
    EXPECT_EQ(store_->counts().xattrReads, 0u) << what;
    EXPECT_GT(attrs->mtime, last) << what;
    EXPECT_GE(attrs->ctime, attrs->mtime) << what;
    last = attrs->mtime;
    auto other = startNode({.attrTimeout = Duration::zero()});
    ASSERT_NE(other, nullptr);
    auto seen = other->fs->lookup(kRootIno, "d");
    ASSERT_OK(seen) << what;
    EXPECT_EQ(seen->mtime, attrs->mtime) << what;
  }
}

TEST_F(FilesystemTest, RenameWithinAndAcrossDirectories) {
  auto d1 = fsA().mkdir(kRootIno, "d1", 0755, {});
  auto d2 = fsA().mkdir(kRootIno, "d2", 0755, {});
  ASSERT_OK(d1);
  ASSERT_OK(d2);
  auto ino = writeFile(fsA(), d1->ino, "a", "content of a");
  ASSERT_OK(ino);

  ASSERT_OK(fsA().rename(d1->ino, "a", d1->ino, "b", 0));
  EXPECT_EQ(errnoOf(fsA().lookup(d1->ino, "a")), ENOENT);
  auto b = fsA().lookup(d1->ino, "b");
  ASSERT_OK(b);
  EXPECT_EQ(b->ino, *ino);

  ASSERT_OK(fsA().rename(d1->ino, "b", d2->ino, "c", 0));
  EXPECT_EQ(errnoOf(fsA().lookup(d1->ino, "b")), ENOENT);
  auto c = fsA().lookup(d2->ino, "c");
  ASSERT_OK(c);
  EXPECT_EQ(c->ino, *ino);
  auto data = readFile(fsA(), *ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "content of a");
  EXPECT_EQ(errnoOf(fsA().rename(d1->ino, "b", d2->ino, "x", 0)), ENOENT);

  // A directory moves with what it holds.
  auto sub = fsA().mkdir(d1->ino, "sub", 0755, {});
  ASSERT_OK(sub);
  ASSERT_OK(writeFile(fsA(), sub->ino, "inner", "inner data"));
  ASSERT_OK(fsA().rename(d1->ino, "sub", d2->ino, "moved", 0));
  auto moved = fsA().lookup(d2->ino, "moved");
  ASSERT_OK(moved);
  EXPECT_EQ(moved->ino, sub->ino);
  auto inner = fsA().lookup(moved->ino, "inner");
  ASSERT_OK(inner);
  data = readFile(fsA(), inner->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "inner data");
  // Nothing is left in the rename journal.
  auto intents = a_->volume->listIntents();
  ASSERT_OK(intents);
  EXPECT_TRUE(intents->empty());
}

TEST_F(FilesystemTest, RenameOverAnExistingTarget) {
  auto src = writeFile(fsA(), kRootIno, "src", "new content");
  auto dst = writeFile(fsA(), kRootIno, "dst", randomBytes(2 * kChunk, 1));
  ASSERT_OK(src);
  ASSERT_OK(dst);
  EXPECT_EQ(errnoOf(fsA().rename(kRootIno, "src", kRootIno, "dst", RENAME_NOREPLACE)), EEXIST);
  EXPECT_EQ(errnoOf(fsA().rename(kRootIno, "src", kRootIno, "dst", RENAME_EXCHANGE)), EINVAL);
  ASSERT_OK(fsA().rename(kRootIno, "src", kRootIno, "dst", 0));
  auto found = fsA().lookup(kRootIno, "dst");
  ASSERT_OK(found);
  EXPECT_EQ(found->ino, *src);
  auto data = readFile(fsA(), *src);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "new content");
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "src")), ENOENT);
  ASSERT_OK(fsA().flushAll());
  EXPECT_EQ(chunksSettleTo(*dst, {}), std::set<cache::ChunkKey>{});  // the replaced file's

  // Across directories, RENAME_NOREPLACE to a free name works.
  auto d = fsA().mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(d);
  ASSERT_OK(fsA().rename(kRootIno, "dst", d->ino, "f", RENAME_NOREPLACE));
  ASSERT_OK(writeFile(fsA(), kRootIno, "other", "other"));
  EXPECT_EQ(errnoOf(fsA().rename(kRootIno, "other", d->ino, "f", RENAME_NOREPLACE)), EEXIST);
  ASSERT_OK(fsA().rename(kRootIno, "other", d->ino, "f", 0));
  auto f = fsA().lookup(d->ino, "f");
  ASSERT_OK(f);
  data = readFile(fsA(), f->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "other");

  // Files and directories do not replace each other; a directory replaces an empty one only.
  auto full = fsA().mkdir(kRootIno, "full", 0755, {});
  auto empty = fsA().mkdir(kRootIno, "empty", 0755, {});
  auto mover = fsA().mkdir(kRootIno, "mover", 0755, {});
  ASSERT_OK(full);
  ASSERT_OK(empty);
  ASSERT_OK(mover);
  ASSERT_OK(writeFile(fsA(), full->ino, "x", "x"));
  EXPECT_EQ(errnoOf(fsA().rename(kRootIno, "mover", kRootIno, "full", 0)), ENOTEMPTY);
  EXPECT_EQ(errnoOf(fsA().rename(kRootIno, "mover", d->ino, "f", 0)), ENOTDIR);
  EXPECT_EQ(errnoOf(fsA().rename(d->ino, "f", kRootIno, "empty", 0)), EISDIR);
  // The refused replacement left "full" usable.
  ASSERT_OK(writeFile(fsA(), full->ino, "y", "y"));
  ASSERT_OK(fsA().rename(kRootIno, "mover", kRootIno, "empty", 0));
  auto replaced = fsA().lookup(kRootIno, "empty");
  ASSERT_OK(replaced);
  EXPECT_EQ(replaced->ino, mover->ino);
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "mover")), ENOENT);
  // Renaming a name onto itself changes nothing.
  ASSERT_OK(fsA().rename(kRootIno, "full", kRootIno, "full", 0));
  ASSERT_OK(fsA().lookup(kRootIno, "full"));
}

// POSIX: a rename marks both parent directories' times for update, over an existing entry too;
// the node that renamed and another node agree on them.
TEST_F(FilesystemTest, ARenameOverAnEntryElsewhereMovesThatDirectorysTimes) {
  auto a = fsA().mkdir(kRootIno, "a", 0755, {});
  auto b = fsA().mkdir(kRootIno, "b", 0755, {});
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_OK(writeFile(fsA(), a->ino, "f", "new"));
  ASSERT_OK(writeFile(fsA(), b->ino, "f", "old"));
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  auto before = other->fs->lookup(kRootIno, "b");
  ASSERT_OK(before);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // so that the times move
  ASSERT_OK(fsA().rename(a->ino, "f", b->ino, "f", 0));
  auto after = other->fs->lookup(kRootIno, "b");
  ASSERT_OK(after);
  EXPECT_GT(after->mtime, before->mtime);
  EXPECT_GE(after->ctime, after->mtime);
  auto here = fsA().getattr(b->ino);
  ASSERT_OK(here);
  EXPECT_EQ(here->mtime, after->mtime);
  auto file = other->fs->lookup(b->ino, "f");
  ASSERT_OK(file);
  auto moved = readFile(*other->fs, file->ino);
  ASSERT_OK(moved);
  EXPECT_EQ(*moved, "new");
}

// An open file that is renamed keeps working, and its commit lands at its new name.
TEST_F(FilesystemTest, AnOpenFileCommitsAtItsNewName) {
  auto d = fsA().mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(d);
  auto created = fsA().create(kRootIno, "draft", 0644, O_CREAT | O_RDWR, {});
  ASSERT_OK(created);
  ASSERT_OK(fsA().write(*created->second, 0, "first "));
  ASSERT_OK(fsA().rename(kRootIno, "draft", d->ino, "final", 0));
  ASSERT_OK(fsA().write(*created->second, 6, "second"));
  ASSERT_OK(fsA().release(std::move(created->second)));
  auto other = startNode({});
  auto otherD = other->fs->lookup(kRootIno, "d");
  ASSERT_OK(otherD);
  auto found = other->fs->lookup(otherD->ino, "final");
  ASSERT_OK(found);
  auto data = readFile(*other->fs, found->ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "first second");
}

TEST_F(FilesystemTest, SymlinkAndReadlink) {
  auto link = fsA().symlink(kRootIno, "link", "some/where/else", {.uid = 3, .gid = 4});
  ASSERT_OK(link);
  EXPECT_TRUE(link->isSymlink());
  EXPECT_EQ(link->size, 15u);
  EXPECT_EQ(link->uid, 3u);
  auto target = fsA().readlink(link->ino);
  ASSERT_OK(target);
  EXPECT_EQ(*target, "some/where/else");
  EXPECT_EQ(errnoOf(fsA().symlink(kRootIno, "link", "x", {})), EEXIST);
  EXPECT_EQ(errnoOf(fsA().symlink(kRootIno, "empty", "", {})), ENOENT);
  EXPECT_EQ(errnoOf(fsA().symlink(kRootIno, "long", std::string(4096, 'x'), {})), ENAMETOOLONG);
  auto file = writeFile(fsA(), kRootIno, "file", "");
  ASSERT_OK(file);
  EXPECT_EQ(errnoOf(fsA().readlink(*file)), EINVAL);

  auto other = startNode({});  // as stored
  auto found = other->fs->lookup(kRootIno, "link");
  ASSERT_OK(found);
  target = other->fs->readlink(found->ino);
  ASSERT_OK(target);
  EXPECT_EQ(*target, "some/where/else");
  ASSERT_OK(fsA().unlink(kRootIno, "link"));
  EXPECT_EQ(errnoOf(fsA().lookup(kRootIno, "link")), ENOENT);
}

TEST_F(FilesystemTest, SetattrChangesModeOwnerAndTimes) {
  auto ino = writeFile(fsA(), kRootIno, "f", "data");
  ASSERT_OK(ino);
  fs::SetAttr change{.setMode = true,
                     .setUid = true,
                     .setGid = true,
                     .setMtime = true,
                     .mode = 04711,
                     .uid = 10,
                     .gid = 20,
                     .mtime = {1234567890, 5}};
  auto after = fsA().setattr(*ino, change);
  ASSERT_OK(after);
  EXPECT_EQ(after->mode, 04711u);
  EXPECT_EQ(after->uid, 10u);
  EXPECT_EQ(after->gid, 20u);
  EXPECT_EQ(after->mtime, (fs::Timestamp{1234567890, 5}));
  EXPECT_EQ(after->size, 4u);
  auto other = startNode({});
  auto found = other->fs->lookup(kRootIno, "f");
  ASSERT_OK(found);
  EXPECT_EQ(found->mode, 04711u);
  EXPECT_EQ(found->mtime, (fs::Timestamp{1234567890, 5}));
}

// An mtime set while writes are unflushed (tar sets it before close) survives their commit.
TEST_F(FilesystemTest, MtimeSetBeforeCloseSurvivesTheCommit) {
  auto created = fsA().create(kRootIno, "f", 0644, O_CREAT | O_WRONLY, {});
  ASSERT_OK(created);
  ASSERT_OK(fsA().write(*created->second, 0, "data"));
  ASSERT_OK(fsA().setattr(created->first.ino, {.setMtime = true, .mtime = {1000, 0}}));
  ASSERT_OK(fsA().release(std::move(created->second)));
  auto attrs = fsA().getattr(created->first.ino);
  ASSERT_OK(attrs);
  EXPECT_EQ(attrs->mtime, (fs::Timestamp{1000, 0}));
  EXPECT_EQ(attrs->size, 4u);
}

// tar's fchown, fchmod and utimensat after its writes: the first commits the writes and its
// attributes in one dentry update, and another node sees data and attributes together.
TEST_F(FilesystemTest, AttributesSetAfterWritesCommitWithThem) {
  auto created = fsA().create(kRootIno, "f", 0600, O_CREAT | O_WRONLY, {});
  ASSERT_OK(created);
  const Ino ino = created->first.ino;
  ASSERT_OK(fsA().write(*created->second, 0, "data"));
  store_->reset();
  ASSERT_OK(fsA().setattr(ino, {.setUid = true, .setGid = true, .uid = 7, .gid = 8}));
  EXPECT_EQ(store_->counts().dataWrites, 1u);  // the chunk
  EXPECT_EQ(store_->counts().mutations, 2u);   // the chunk, one dentry update
  store_->reset();
  ASSERT_OK(fsA().setattr(ino, {.setMode = true, .mode = 0640}));
  ASSERT_OK(fsA().setattr(ino, {.setMtime = true, .mtime = {1000, 0}}));
  EXPECT_EQ(store_->counts().mutations, 2u);  // a dentry update each: nothing left to commit
  store_->reset();
  ASSERT_OK(fsA().release(std::move(created->second)));
  EXPECT_EQ(store_->counts().mutations, 0u);

  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  auto seen = other->fs->lookup(kRootIno, "f");
  ASSERT_OK(seen);
  EXPECT_EQ(seen->size, 4u);
  EXPECT_EQ(seen->uid, 7u);
  EXPECT_EQ(seen->gid, 8u);
  EXPECT_EQ(seen->mode, 0640u);
  EXPECT_EQ(seen->mtime, (fs::Timestamp{1000, 0}));
  auto data = readFile(*other->fs, ino);
  ASSERT_OK(data);
  EXPECT_EQ(*data, "data");
  EXPECT_EQ(errnoOf(fsA().getxattr(ino, "security.capability")), ENODATA);
}

// A truncate with attributes in one setattr (after writes still pending) applies both.
TEST_F(FilesystemTest, ATruncateWithAttributesAfterWritesAppliesBoth) {
  auto created = fsA().create(kRootIno, "f", 0600, O_CREAT | O_WRONLY, {});
  ASSERT_OK(created);
  const Ino ino = created->first.ino;
  ASSERT_OK(fsA().write(*created->second, 0, "data"));
  ASSERT_OK(fsA().setattr(ino, {.setMode = true,
                                .setSize = true,
                                .setMtime = true,
                                .mode = 0640,
                                .size = 2,
                                .mtime = {1000, 0}}));
  ASSERT_OK(fsA().release(std::move(created->second)));
  auto other = startNode({.attrTimeout = Duration::zero()});
  ASSERT_NE(other, nullptr);
  auto seen = other->fs->lookup(kRootIno, "f");
  ASSERT_OK(seen);
  EXPECT_EQ(seen->size, 2u);
  EXPECT_EQ(seen->mode, 0640u);
  EXPECT_EQ(seen->mtime, (fs::Timestamp{1000, 0}));
}

TEST_F(FilesystemTest, ExtendedAttributes) {
  auto ino = writeFile(fsA(), kRootIno, "f", "data");
  ASSERT_OK(ino);
  EXPECT_EQ(errnoOf(fsA().getxattr(*ino, "user.a")), ENODATA);
  ASSERT_OK(fsA().setxattr(*ino, "user.a", "1", 0));
  auto value = fsA().getxattr(*ino, "user.a");
  ASSERT_OK(value);
  EXPECT_EQ(*value, "1");
  EXPECT_EQ(errnoOf(fsA().setxattr(*ino, "user.a", "2", XATTR_CREATE)), EEXIST);
  EXPECT_EQ(errnoOf(fsA().setxattr(*ino, "user.b", "2", XATTR_REPLACE)), ENODATA);
  ASSERT_OK(fsA().setxattr(*ino, "user.a", "3", XATTR_REPLACE));
  ASSERT_OK(fsA().setxattr(*ino, "user.b", std::string("\0binary\xff", 8), XATTR_CREATE));
  ASSERT_OK(fsA().setxattr(*ino, "user.empty", "", 0));
  EXPECT_EQ(errnoOf(fsA().setxattr(*ino, "trusted.x", "1", 0)), EOPNOTSUPP);
  EXPECT_EQ(errnoOf(fsA().setxattr(*ino, "user.big", std::string(65537, 'v'), 0)), E2BIG);

  auto names = fsA().listxattr(*ino);
  ASSERT_OK(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"user.a", "user.b", "user.empty"}));
  ASSERT_OK(fsA().removexattr(*ino, "user.a"));
  EXPECT_EQ(errnoOf(fsA().removexattr(*ino, "user.a")), ENODATA);
  EXPECT_EQ(errnoOf(fsA().getxattr(*ino, "user.a")), ENODATA);

  auto other = startNode({});  // as stored
  auto found = other->fs->lookup(kRootIno, "f");
  ASSERT_OK(found);
  value = other->fs->getxattr(found->ino, "user.b");
  ASSERT_OK(value);
  EXPECT_EQ(*value, std::string("\0binary\xff", 8));
  value = other->fs->getxattr(found->ino, "user.empty");
  ASSERT_OK(value);
  EXPECT_EQ(*value, "");
  names = other->fs->listxattr(found->ino);
  ASSERT_OK(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"user.b", "user.empty"}));

  // Directories have them too.
  auto dir = fsA().mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(dir);
  ASSERT_OK(fsA().setxattr(dir->ino, "user.d", "dir", 0));
  value = fsA().getxattr(dir->ino, "user.d");
  ASSERT_OK(value);
  EXPECT_EQ(*value, "dir");
}

TEST_F(FilesystemTest, StoredSizeIsReadOnlyAndShowsCompression) {
  const std::uint64_t size = 16 * kChunk;
  auto zeroFile = writeFile(fsA(), kRootIno, "zeros", std::string(size, '\0'));
  auto randomFile = writeFile(fsA(), kRootIno, "random", randomBytes(size, 2));
  ASSERT_OK(zeroFile);
  ASSERT_OK(randomFile);
  auto zeroStored = fsA().getxattr(*zeroFile, kStoredSize);
  auto randomStored = fsA().getxattr(*randomFile, kStoredSize);
  ASSERT_OK(zeroStored);
  ASSERT_OK(randomStored);
  EXPECT_GT(std::stoull(*zeroStored), 0u);
  EXPECT_LT(std::stoull(*zeroStored), size / 50) << *zeroStored;
  EXPECT_GE(std::stoull(*randomStored), size);  // incompressible: stored raw, plus headers
  EXPECT_LT(std::stoull(*randomStored), size + size / 50);

  EXPECT_EQ(errnoOf(fsA().setxattr(*zeroFile, kStoredSize, "1", 0)), EPERM);
  auto names = fsA().listxattr(*zeroFile);
  ASSERT_OK(names);
  EXPECT_TRUE(names->empty());  // not listed: `cp -a` must not try to copy it
  auto empty = writeFile(fsA(), kRootIno, "empty", "");
  ASSERT_OK(empty);
  auto emptyStored = fsA().getxattr(*empty, kStoredSize);
  ASSERT_OK(emptyStored);
  EXPECT_EQ(*emptyStored, "0");
}

TEST_F(FilesystemTest, StatfsIsSane) {
  ASSERT_OK(writeFile(fsA(), kRootIno, "f", randomBytes(kChunk, 3)));
  auto st = fsA().statfs();
  ASSERT_OK(st);
  EXPECT_EQ(st->blockSize, 4096u);
  EXPECT_GT(st->blocks, 0u);
  EXPECT_LE(st->blocksFree, st->blocks);
  EXPECT_LE(st->blocksAvail, st->blocksFree);
  EXPECT_GE(st->files, 3u);  // the volume, the root directory and the file's chunk
  EXPECT_EQ(st->filesFree, st->blocksAvail);
}

TEST_F(FilesystemTest, LookupCountsAreForgotten) {
  ASSERT_OK(writeFile(fsA(), kRootIno, "f", "x"));
  const std::size_t before = fsA().nodeCount();
  auto found = fsA().lookup(kRootIno, "f");
  ASSERT_OK(found);
  ASSERT_OK(fsA().lookup(kRootIno, "f"));
  // create counted one lookup, and the two above two more.
  fsA().forget(found->ino, 2);
  EXPECT_EQ(fsA().nodeCount(), before);
  fsA().forget(found->ino, 1);
  EXPECT_EQ(fsA().nodeCount(), before - 1);
  EXPECT_EQ(errnoOf(fsA().getattr(found->ino)), ESTALE);
  fsA().forget(kRootIno, 1000);  // the root is never forgotten
  ASSERT_OK(fsA().getattr(kRootIno));
}

// ---- readdir ----

class FilesystemReaddirTest : public FilesystemTest {
 protected:
  static constexpr int kEntries = 5000;

  void SetUp() override {
    FilesystemTest::SetUp();
    a_.reset();
    a_ = startNode({.readdirPage = 100});
    auto dir = fsA().mkdir(kRootIno, "big", 0755, {});
    ASSERT_OK(dir);
    dir_ino_ = dir->ino;
    for (int i = 0; i < kEntries; ++i) {
      std::string name = fmt::format("entry-{:05}", (i * 7919) % kEntries);  // not in order
      auto link = fsA().symlink(dir_ino_, name, "t", {});
      ASSERT_OK(link);
      fsA().forget(link->ino, 1);
      names_.push_back(name);
    }
    std::sort(names_.begin(), names_.end());
  }

  struct Seen {
    std::string name;
    std::uint64_t nextOffset;
  };

  // One readdir call of the kernel: takes up to `room` entries from `offset`.
  std::vector<Seen> readdirCall(fs::DirCursor& cursor, std::uint64_t offset, std::size_t room) {
    std::vector<Seen> out;
    Status s = fsA().readdir(cursor, offset, [&](const fs::DirEntry& e) {
      if (out.size() == room) return false;  // the buffer is full
      out.push_back({std::string(e.name), e.nextOffset});
      return true;
    });
    EXPECT_OK(s);
    return out;
  }

  Ino dir_ino_ = 0;
  std::vector<std::string> names_;  // sorted
};

TEST_F(FilesystemReaddirTest, ListsEveryNameOnceInOrder) {
  auto cursor = fsA().opendir(dir_ino_);
  ASSERT_OK(cursor);
  std::vector<std::string> listed;
  std::uint64_t offset = 0;
  std::mt19937_64 rng(4);
  for (;;) {
    auto got = readdirCall(**cursor, offset, 1 + rng() % 150);
    if (got.empty()) break;
    for (const auto& e : got) listed.push_back(e.name);
    offset = got.back().nextOffset;  // the kernel goes on after the last entry it took
  }
  ASSERT_EQ(listed.size(), names_.size() + 2);
  EXPECT_EQ(listed[0], ".");
  EXPECT_EQ(listed[1], "..");
  listed.erase(listed.begin(), listed.begin() + 2);
  EXPECT_TRUE(listed == names_);
}

TEST_F(FilesystemReaddirTest, ResumesFromAnyOffsetAndRewinds) {
  auto cursor = fsA().opendir(dir_ino_);
  ASSERT_OK(cursor);
  // Offsets as handed out by a full listing.
  std::vector<Seen> all;
  std::uint64_t offset = 0;
  for (;;) {
    auto got = readdirCall(**cursor, offset, 1000);
    if (got.empty()) break;
    all.insert(all.end(), got.begin(), got.end());
    offset = got.back().nextOffset;
  }
  ASSERT_EQ(all.size(), names_.size() + 2);
  // seekdir to the offset after entry i gives entry i + 1, forwards and backwards, on the same
  // cursor and on a fresh one.
  std::mt19937_64 rng(5);
  for (int round = 0; round < 30; ++round) {
    const std::size_t i = rng() % (all.size() - 1);
    auto got = readdirCall(**cursor, all[i].nextOffset, 3);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got[0].name, all[i + 1].name) << "after entry " << i;
    EXPECT_EQ(got[0].nextOffset, all[i + 1].nextOffset);
  }
  auto fresh = fsA().opendir(dir_ino_);
  ASSERT_OK(fresh);
  auto got = readdirCall(**fresh, all[4321].nextOffset, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, all[4322].name);
  EXPECT_EQ(got[1].name, all[4323].name);
  // The end: nothing after the last entry.
  EXPECT_TRUE(readdirCall(**cursor, all.back().nextOffset, 10).empty());
  // rewinddir: from 0 again, the whole listing.
  std::vector<std::string> again;
  offset = 0;
  for (;;) {
    auto page = readdirCall(**cursor, offset, 777);
    if (page.empty()) break;
    for (const auto& e : page) again.push_back(e.name);
    offset = page.back().nextOffset;
  }
  ASSERT_EQ(again.size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(again[i], all[i].name) << i;
}

// readdirplus hands out attributes from the dentries it lists; a file with unflushed writes on
// this node shows its local size there too.
TEST_F(FilesystemTest, ListedAttributesShowUnflushedSizes) {
  auto created = fsA().create(kRootIno, "growing", 0644, O_CREAT | O_WRONLY, {});
  ASSERT_OK(created);
  ASSERT_OK(fsA().write(*created->second, 0, randomBytes(3 * kChunk + 1, 5)));
  ASSERT_OK(writeFile(fsA(), kRootIno, "still", "12345"));
  auto cursor = fsA().opendir(kRootIno);
  ASSERT_OK(cursor);
  std::map<std::string, std::uint64_t> sizes;
  ASSERT_OK(fsA().readdir(**cursor, 0, [&](const fs::DirEntry& e) {
    if (e.dentry) sizes[std::string(e.name)] = fsA().entryAttributes(*e.dentry).size;
    return true;
  }));
  EXPECT_EQ(sizes,
            (std::map<std::string, std::uint64_t>{{"growing", 3 * kChunk + 1}, {"still", 5}}));
  ASSERT_OK(fsA().release(std::move(created->second)));
}

TEST_F(FilesystemTest, EmptyDirectoryListsDotAndDotDot) {
  auto dir = fsA().mkdir(kRootIno, "d", 0755, {});
  ASSERT_OK(dir);
  auto cursor = fsA().opendir(dir->ino);
  ASSERT_OK(cursor);
  std::vector<std::pair<std::string, Ino>> seen;
  ASSERT_OK(fsA().readdir(**cursor, 0, [&](const fs::DirEntry& e) {
    seen.emplace_back(std::string(e.name), e.ino);
    return true;
  }));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::pair<std::string, Ino>{".", dir->ino}));
  EXPECT_EQ(seen[1], (std::pair<std::string, Ino>{"..", kRootIno}));
  auto file = writeFile(fsA(), kRootIno, "f", "");
  ASSERT_OK(file);
  EXPECT_EQ(errnoOf(fsA().opendir(*file)), ENOTDIR);
}

}  // namespace
}  // namespace tierfs::testing
