// Filesystem: names — lookup, create of directories and symlinks, unlink, rmdir, rename.
#include <fmt/format.h>
#include <linux/fs.h>

#include <cerrno>

#include "common/ProcessIdentity.h"
#include "fs/Filesystem.h"

namespace tierfs::fs {
namespace {

constexpr int kMaxEntryRetries = 8;  // lost races with another node before giving up (EBUSY)

std::string journalKey(std::uint64_t id) { return fmt::format("{:016x}", id); }

}  // namespace

Result<std::shared_ptr<Node>> Filesystem::node(Ino ino) const {
  auto n = nodes_.find(ino);
  if (!n) return failure(Status::posix(ESTALE, fmt::format("inode {} is not known", ino)));
  return n;
}

Result<Dentry> Filesystem::childDentry(Ino parent, std::string_view name) {
  TIERFS_RETURN_IF_ERROR(checkName(name));
  TIERFS_ASSIGN_OR_RETURN(auto dir, node(parent));
  {
    std::lock_guard lock(dir->mu);
    if (!dir->dentry.inode.isDir()) {
      return failure(Status::posix(ENOTDIR, fmt::format("inode {} is not a directory", parent)));
    }
  }
  TIERFS_ASSIGN_OR_RETURN(auto found, volume_.readDentry(Location::of(parent, name)));
  if (!found) return failure(Status::posix(ENOENT, fmt::format("no entry '{}'", name)));
  TIERFS_RETURN_IF_ERROR(withDirTimes(found->inode));
  return std::move(*found);
}

Result<Inode> Filesystem::lookup(Ino parent, std::string_view name) {
  if (name.size() > kMaxNameLength) return failure(Status::posix(ENAMETOOLONG, "name too long"));
  const std::string key(name);
  if (auto hit = listedDentry(parent, key)) {
    // A directory's times live in its own object: read now, as a lookup from the store does.
    Status times = withDirTimes(hit->dentry.inode);
    if (times.isOk()) {
      if (hit->dentry.inode.isDir()) hit->fetchedAt = Clock::now();
      auto n = nodes_.remember(parent, key, hit->dentry, true, hit->fetchedAt);
      return withLocalSize(*n);
    }
    TIERFS_RETURN_IF_ERROR(keepStaleOn(times));  // else on to what this node knows, below
  }
  // While the back end does not answer, a name this node knows keeps resolving to what it was.
  if (inStaleHold()) {
    if (auto known = nodes_.lookupKnown(parent, key)) return withLocalSize(*known);
  }
  auto d = childDentry(parent, name);
  if (!d) {
    if (!keepStaleOn(d.error())) return failure(d.error());
    auto known = nodes_.lookupKnown(parent, key);
    if (!known) return failure(d.error());
    return withLocalSize(*known);
  }
  auto n = nodes_.remember(parent, key, *d, true);
  return withLocalSize(*n);
}

// A dentry from a listing of its directory (DentryCache): listed whole on the second lookup miss
// within attr_timeout, renewed after that by a stat while the directory object has not changed.
std::optional<DentryCache::Hit> Filesystem::listedDentry(Ino parent, const std::string& name) {
  auto hit = dentries_.find(parent, name);
  if (hit || inStaleHold()) return hit;
  if (auto listed = dentries_.expiredVersion(parent)) {
    const Clock::time_point checkedAt = Clock::now();
    auto now = volume_.dirVersion(parent);
    if (!now) {
      (void)keepStaleOn(now.error());  // no second wait in childDentry's read
      return std::nullopt;
    }
    dentries_.renew(parent, *now, checkedAt);
    if (*now == *listed) return dentries_.find(parent, name);
  }
  if (!dentries_.shouldList(parent)) return std::nullopt;
  const Clock::time_point fetchedAt = Clock::now();
  std::vector<std::pair<std::string, Dentry>> all;
  std::optional<std::uint64_t> version;  // of every page, or 0 when they differ
  std::string after;
  DirCursor cursor{.dir = parent};
  for (;;) {
    auto page = listPage(cursor, after);
    if (!page) (void)keepStaleOn(page.error());  // no second wait in childDentry's read
    if (!page || all.size() + page->entries.size() > options_.dentryListMax) {
      dentries_.store(parent, std::nullopt, fetchedAt);
      return std::nullopt;
    }
    version = !version || *version == page->version ? page->version : 0;
    for (auto& e : page->entries) all.push_back(std::move(e));
    if (!page->more || all.empty()) break;
    after = all.back().first;
  }
  dentries_.store(parent, std::move(all), fetchedAt, version.value_or(0));
  return dentries_.find(parent, name);
}

void Filesystem::forget(Ino ino, std::uint64_t n) { nodes_.forget(ino, n); }

void Filesystem::rememberEntry(Ino parent, const std::string& name, const Dentry& dentry) {
  // A directory's times live in its own object, not in the dentry listed here: its next
  // getattr must read them.
  const bool dir = dentry.inode.isDir();
  nodes_.remember(parent, name, dentry, true, dir ? Clock::time_point{} : Clock::now());
}

Result<Inode> Filesystem::newInode(Ino parent, FileType type, std::uint32_t mode, Caller who) {
  TIERFS_ASSIGN_OR_RETURN(auto dir, node(parent));
  Inode n;
  TIERFS_ASSIGN_OR_RETURN(n.ino, volume_.newId());
  n.type = type;
  n.mode = mode & 07777;
  n.uid = who.uid;
  n.gid = who.gid;
  n.atime = n.mtime = n.ctime = Timestamp::now();
  std::lock_guard lock(dir->mu);
  if (dir->dentry.inode.mode & S_ISGID) {  // BSD group semantics for set-group-ID directories
    n.gid = dir->dentry.inode.gid;
    if (type == FileType::kDirectory) n.mode |= S_ISGID;
  }
  return n;
}

// Adds the dentry of a new inode; EEXIST when the name is taken, ENOENT when the directory went.
Result<Inode> Filesystem::addEntry(Ino parent, std::string_view name, Inode inode) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_RETURN_IF_ERROR(checkName(name));
  Dentry d{inode, encodeInode(inode)};
  const Timestamp now = Timestamp::now();
  Status s = volume_.updateDir(dirObject(parent), {{std::string(name), "", d.encoded}}, now);
  if (s.code() != StatusCode::kPreconditionFailed && !s.isNotFound()) {
    TIERFS_RETURN_IF_ERROR(s);
    entriesChanged(parent, now);
  } else {
    auto existing = volume_.readDentry(Location::of(parent, name));
    const bool taken = existing && *existing;
    // Inode numbers are never reused: the name holds this inode when an earlier update of ours
    // did land (one that timed out, or a group's) at a time not this call's.
    if (taken && (*existing)->inode.ino != inode.ino) {
      return failure(Status::posix(EEXIST, std::string(name)));
    }
    if (!taken) return failure(Status::posix(ENOENT, fmt::format("directory {} is gone", parent)));
    d = std::move(**existing);
    dentries_.invalidate(parent);
    if (auto dir = nodes_.find(parent)) {  // its times are read again when asked
      std::lock_guard lock(dir->mu);
      dir->fetchedAt = {};
    }
  }
  auto n = nodes_.remember(parent, std::string(name), d, true);
  return withLocalSize(*n);
}

Result<Inode> Filesystem::mkdir(Ino parent, std::string_view name, std::uint32_t mode, Caller who) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_RETURN_IF_ERROR(checkName(name));
  TIERFS_ASSIGN_OR_RETURN(Inode dir, newInode(parent, FileType::kDirectory, mode, who));
  TIERFS_RETURN_IF_ERROR(volume_.createDirObject(dir.ino));
  auto added = addEntry(parent, name, dir);
  if (!added) (void)volume_.dropDirObject(dir.ino);
  return added;
}

Result<Inode> Filesystem::symlink(Ino parent, std::string_view name, std::string_view target,
                                  Caller who) {
  if (target.empty() || target.size() > kMaxSymlinkLength) {
    return failure(Status::posix(target.empty() ? ENOENT : ENAMETOOLONG, "symlink target"));
  }
  TIERFS_ASSIGN_OR_RETURN(Inode link, newInode(parent, FileType::kSymlink, 0777, who));
  link.symlinkTarget = target;
  link.size = target.size();
  return addEntry(parent, name, std::move(link));
}

Result<std::string> Filesystem::readlink(Ino ino) {
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  std::lock_guard lock(n->mu);
  if (!n->dentry.inode.isSymlink()) return failure(Status::posix(EINVAL, "not a symlink"));
  return n->dentry.inode.symlinkTarget;
}

Status Filesystem::unlink(Ino parent, std::string_view name) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_RETURN_IF_ERROR(checkName(name));
  // The kernel looked the name up before it asked: the first try removes the dentry this node
  // knows, and the guard sends it back to the store when another node changed the name since.
  std::optional<Dentry> known = knownFile(parent, name);
  for (int attempt = 0; attempt < kMaxEntryRetries; ++attempt) {
    Dentry d;
    if (attempt == 0 && known) {
      d = std::move(*known);
    } else {
      TIERFS_ASSIGN_OR_RETURN(d, childDentry(parent, name));
    }
    if (d.inode.isDir()) return Status::posix(EISDIR, std::string(name));
    const Timestamp now = Timestamp::now();
    Status s = volume_.updateDir(dirObject(parent), {{std::string(name), d.encoded, ""}}, now);
    if (s.code() == StatusCode::kPreconditionFailed) continue;  // changed meanwhile: look again
    TIERFS_RETURN_IF_ERROR(s);
    entriesChanged(parent, now);
    afterRemoval(d);
    return Status::ok();
  }
  return Status::posix(EBUSY, fmt::format("'{}' keeps changing", name));
}

// What this node knows at (parent, name) when that is a file or a symlink: directories are read
// from the store, where their times live.
std::optional<Dentry> Filesystem::knownFile(Ino parent, std::string_view name) {
  auto known = nodes_.knownDentry(parent, std::string(name));
  if (!known || known->inode.isDir()) return std::nullopt;
  return known;
}

Status Filesystem::rmdir(Ino parent, std::string_view name) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_ASSIGN_OR_RETURN(Dentry d, childDentry(parent, name));
  if (!d.inode.isDir()) return Status::posix(ENOTDIR, std::string(name));
  TIERFS_RETURN_IF_ERROR(volume_.sealEmptyDir(d.inode.ino));
  const Timestamp now = Timestamp::now();
  Status s = volume_.updateDir(dirObject(parent), {{std::string(name), d.encoded, ""}}, now);
  if (!s.isOk()) {
    (void)volume_.unsealDir(d.inode.ino);
    return s.code() == StatusCode::kPreconditionFailed ? Status::posix(EBUSY, std::string(name))
                                                       : s;
  }
  entriesChanged(parent, now);
  afterRemoval(d);
  return volume_.dropDirObject(d.inode.ino);
}

// After a dentry is gone: the node (if the kernel holds it) is marked, and a file's chunks are
// removed now, or at the last close when it is still open here.
void Filesystem::afterRemoval(const Dentry& gone) {
  if (auto n = nodes_.find(gone.inode.ino)) {
    std::lock_guard lock(n->mu);
    n->unlinked = true;
    // What was removed: another node may have committed since this one last read the dentry.
    n->dentry = gone;
    if (n->openFiles > 0) return;  // release() removes the chunks
  }
  if (gone.inode.isFile()) dropGarbage(gone.inode.ino, gone.inode.extents, {}, {});
}

Status Filesystem::rename(Ino parent, std::string_view name, Ino newParent,
                          std::string_view newName, unsigned flags) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  if (flags & ~unsigned{RENAME_NOREPLACE}) {
    return Status::posix(EINVAL, "only RENAME_NOREPLACE is supported");
  }
  TIERFS_RETURN_IF_ERROR(checkName(name));
  TIERFS_RETURN_IF_ERROR(checkName(newName));
  // First with what this node knows of both names (a target it knows nothing of taken to be
  // absent). Only a success is final: a guess the guards refuse, or an error that came from the
  // guess (EEXIST for a target removed elsewhere), is tried again with both names read below.
  if (auto src = knownFile(parent, name)) {
    auto dst = nodes_.knownDentry(newParent, std::string(newName));
    const bool guessable = !dst || (!dst->inode.isDir() && dst->inode.ino != src->inode.ino);
    if (guessable) {
      Status s = renameFrom(parent, name, newParent, newName, flags, {*src, dst});
      if (s.isOk()) return s;
    }
  }
  TIERFS_ASSIGN_OR_RETURN(Dentry src, childDentry(parent, name));
  auto dst = childDentry(newParent, newName);
  if (!dst && dst.error().toErrno() != ENOENT) return dst.error();
  std::optional<Dentry> target;
  if (dst) target = std::move(*dst);
  Status s = renameFrom(parent, name, newParent, newName, flags, {src, target});
  return s.code() == StatusCode::kPreconditionFailed ? Status::posix(EBUSY, "rename raced") : s;
}

// The rename of `ends.src` over `ends.dst` (none: the target is absent) in guarded updates:
// kPreconditionFailed when either name is not what the caller thought.
Status Filesystem::renameFrom(Ino parent, std::string_view name, Ino newParent,
                              std::string_view newName, unsigned flags, const RenameEnds& ends) {
  const Dentry& src = ends.src;
  const std::optional<Dentry>& dst = ends.dst;
  std::string replaced;
  if (dst) {
    if (flags & RENAME_NOREPLACE) return Status::posix(EEXIST, std::string(newName));
    if (dst->inode.ino == src.inode.ino) return Status::ok();
    if (src.inode.isDir() && !dst->inode.isDir()) return Status::posix(ENOTDIR, "target");
    if (!src.inode.isDir() && dst->inode.isDir()) return Status::posix(EISDIR, "target");
    if (dst->inode.isDir()) TIERFS_RETURN_IF_ERROR(volume_.sealEmptyDir(dst->inode.ino));
    replaced = dst->encoded;
  }
  const Timestamp now = Timestamp::now();
  Dentry moved = src;
  moved.inode.ctime = now;
  moved.encoded = encodeInode(moved.inode);
  Status s;
  if (parent == newParent) {
    s = volume_.updateDir(
        dirObject(parent),
        {{std::string(name), src.encoded, ""}, {std::string(newName), replaced, moved.encoded}},
        now);
  } else {
    s = renameAcross(parent, std::string(name), src.encoded, newParent, std::string(newName),
                     {moved.encoded, replaced}, now);
  }
  if (!s.isOk()) {
    if (dst && dst->inode.isDir()) (void)volume_.unsealDir(dst->inode.ino);
    return s;
  }
  entriesChanged(parent, now);
  entriesChanged(newParent, now);
  if (dst) {
    afterRemoval(*dst);
    if (dst->inode.isDir()) (void)volume_.dropDirObject(dst->inode.ino);
  }
  nodes_.moved(moved.inode.ino, newParent, std::string(newName), moved);
  return Status::ok();
}

// A rename between two directory objects: an intent in the journal object first, so that a crash
// between the two updates is rolled forward (or back) by the next mount or fsck.
Status Filesystem::renameAcross(Ino parent, const std::string& name, const std::string& source,
                                Ino newParent, const std::string& newName, const Swap& swap,
                                const Timestamp& at) {
  const std::string& moved = swap.moved;
  const std::string& replaced = swap.replaced;
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t id, volume_.newId());
  RenameIntent intent{
      parent, name, newParent, newName, moved, replaced, Timestamp::now().sec, processIdentity()};
  const std::string key = journalKey(id);
  TIERFS_RETURN_IF_ERROR(volume_.recordIntent(key, encodeIntent(intent)));
  Status s = volume_.updateDir(dirObject(newParent), {{newName, replaced, moved}}, at,
                               /*namesChange=*/true);
  if (s.isOk()) {
    s = volume_.updateDir(dirObject(parent), {{name, source, ""}}, at);
    if (!s.isOk()) (void)volume_.updateDir(dirObject(newParent), {{newName, moved, replaced}});
  }
  Status cleared = volume_.clearIntent(key);
  return s.isOk() ? cleared : s;
}

}  // namespace tierfs::fs
