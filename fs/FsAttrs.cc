// Filesystem: attributes and extended attributes, and the guarded inode update they share with
// commits.
#include <fmt/format.h>
#include <sys/xattr.h>

#include <cerrno>

#include "fs/Filesystem.h"

namespace tierfs::fs {
namespace {

constexpr int kMaxUpdateRetries = 16;  // commits that lost a race with another node
constexpr std::string_view kUserPrefix = "user.";
// Read-only and not listed (so `cp -a` does not copy it): the bytes a file takes in the store.
constexpr std::string_view kStoredSizeXattr = "user.tierfs.stored_size";
// Read-only and not listed, on the root: what the chunk cache has done and holds, as JSON.
constexpr std::string_view kCacheStatsXattr = "user.tierfs.cache_stats";
// Where the daemon's control socket is: how `tierfs warm|status|evict PATH` find it.
constexpr std::string_view kControlSocketXattr = "user.tierfs.control_socket";

// The chunk cache's counters, then the listing cache's (zeros without one).
std::string toJson(const cache::ChunkCacheStats& s, const cache::ListingCacheStats& l,
                   const DatasetSweep::Stats& w) {
  return fmt::format(
      "{{\"memory_hits\":{},\"device_hits\":{},\"backend_reads\":{},"
      "\"bytes_from_device\":{},\"bytes_from_backend\":{},\"device_entries\":{},"
      "\"device_used_bytes\":{},\"device_capacity_bytes\":{},\"device_occupied_bytes\":{},"
      "\"device_evicted_regions\":{},\"device_corruptions\":{},\"device_not_admitted\":{},"
      "\"device_framed_bytes\":{},\"device_raw_bytes\":{},\"device_failed\":{},"
      "\"listing_hits\":{},\"listing_misses\":{},\"listings_kept\":{},\"listing_bytes\":{},"
      "\"listings_evicted\":{},\"sweeps\":{},\"swept_files\":{},\"swept_bytes\":{},"
      "\"prefetched_chunks\":{},\"prefetch_used\":{}}}",
      s.memoryHits, s.deviceHits, s.backendReads, s.bytesFromDevice, s.bytesFromBackend,
      s.deviceEntries, s.deviceUsedBytes, s.deviceCapacityBytes, s.deviceOccupiedBytes,
      s.deviceEvictedRegions, s.deviceCorruptions, s.deviceNotAdmitted, s.deviceFramedBytes,
      s.deviceRawBytes, s.deviceFailed, l.hits, l.misses, l.listings, l.bytes, l.evicted, w.sweeps,
      w.files, w.fetchedBytes, s.prefetchedChunks, s.prefetchUsed);
}

}  // namespace

Status Filesystem::checkWritable() const {
  if (options_.readOnly) return Status::posix(EROFS, "read-only mount");
  return Status::ok();
}

Inode Filesystem::withLocalSize(Node& n) {
  std::lock_guard lock(n.mu);
  Inode inode = n.dentry.inode;
  if (n.writer) inode.size = n.writer->size();
  return inode;
}

Status Filesystem::refreshIfStale(Node& n) {
  Location where;
  {
    std::lock_guard lock(n.mu);
    if (Clock::now() - n.fetchedAt < options_.attrTimeout || n.unlinked) return Status::ok();
    where = n.location();
  }
  if (inStaleHold()) return Status::ok();  // the back end is not answering: use what we know
  auto read = volume_.readDentry(where);
  if (!read) return keepStaleOn(read.error());
  auto& fresh = *read;
  if (fresh) {
    if (Status s = withDirTimes(fresh->inode); !s) return keepStaleOn(s);
  }
  std::lock_guard lock(n.mu);
  if (!fresh || fresh->inode.ino != n.ino) {
    // Removed or replaced on another node: the kernel will look the name up again.
    return Status::posix(ESTALE, fmt::format("inode {} is no longer at '{}'", n.ino, where.key));
  }
  n.dentry = std::move(*fresh);
  n.fetchedAt = Clock::now();
  return Status::ok();
}

Status Filesystem::keepStaleOn(const Status& error) {
  if (!error.retryable()) return error;
  const auto until = (Clock::now() + options_.staleHold).time_since_epoch().count();
  auto& current = stale_->until;
  for (auto seen = current.load(); seen < until && !current.compare_exchange_weak(seen, until);) {
  }
  return Status::ok();
}

bool Filesystem::inStaleHold() {
  const Clock::rep now = Clock::now().time_since_epoch().count();
  if (now >= stale_->until.load()) return false;
  const Clock::rep due =
      stale_->probedAt.load() +
      std::chrono::duration_cast<Clock::duration>(options_.probeInterval).count();
  if (now >= due && !stale_->probing.exchange(true)) {
    stale_->probedAt.store(now);
    const Clock::rep hold = std::chrono::duration_cast<Clock::duration>(options_.staleHold).count();
    volume_.store().stat(
        std::string(kVolumeObject), [state = stale_, hold](Result<backends::ObjectStat> got) {
          if (got) {
            state->until.store(0);  // the back end answers again
          } else if (got.error().retryable()) {
            const Clock::rep until = Clock::now().time_since_epoch().count() + hold;
            Clock::rep seen = state->until.load();
            while (seen < until && !state->until.compare_exchange_weak(seen, until)) {
            }
          }
          state->probing.store(false);
        });
  }
  return true;
}

// A directory's mtime and ctime move with its entries, which live in its own object.
Status Filesystem::withDirTimes(Inode& inode) {
  if (!inode.isDir()) return Status::ok();
  TIERFS_ASSIGN_OR_RETURN(auto changed, volume_.dirMtime(inode.ino));
  if (changed) {
    inode.mtime = *changed;
    inode.ctime = std::max(inode.ctime, *changed);
  }
  return Status::ok();
}

// The directory's times are what this node just wrote: its next getattr needs no store read (a
// cp or tar into a directory had every file pay two, the kernel asking for the directory's
// attributes after each create). They stay as fresh as the attributes were, as in the kernel's
// own attribute cache.
void Filesystem::entriesChanged(Ino dir, const Timestamp& at) {
  dentries_.invalidate(dir);
  if (auto n = nodes_.find(dir)) {
    std::lock_guard lock(n->mu);
    n->dentry.inode.mtime = at;
    n->dentry.inode.ctime = std::max(n->dentry.inode.ctime, at);
  }
}

Result<Inode> Filesystem::getattr(Ino ino) {
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  TIERFS_RETURN_IF_ERROR(refreshIfStale(*n));
  return withLocalSize(*n);
}

// Applies `mutate` to the node's inode with a guarded dentry update; when another node changed
// the dentry first, reads it again and reapplies.
Result<Filesystem::Commit> Filesystem::updateInode(Node& n, const Mutation& mutate) {
  for (int attempt = 0; attempt < kMaxUpdateRetries; ++attempt) {
    Location where;
    Dentry current;
    {
      std::lock_guard lock(n.mu);
      where = n.location();
      current = n.dentry;
    }
    Inode next = current.inode;
    TIERFS_RETURN_IF_ERROR(mutate(next));
    std::string encoded = encodeInode(next);
    Status s = volume_.updateDir(where.object, {{where.key, current.encoded, encoded}});
    if (s.isOk()) {
      std::lock_guard lock(n.mu);
      if (n.parent != 0) dentries_.invalidate(n.parent);
      n.dentry = {next, std::move(encoded)};
      n.fetchedAt = Clock::now();
      return Commit{std::move(current.inode), std::move(next)};
    }
    if (s.code() != StatusCode::kPreconditionFailed) return failure(s);
    TIERFS_ASSIGN_OR_RETURN(auto fresh, volume_.readDentry(where));
    if (!fresh || fresh->inode.ino != n.ino) {
      return failure(Status::posix(ESTALE, fmt::format("inode {} was removed", n.ino)));
    }
    std::lock_guard lock(n.mu);
    n.dentry = std::move(*fresh);
  }
  return failure(Status::posix(EBUSY, fmt::format("inode {} keeps changing", n.ino)));
}

void Filesystem::applyAttrs(Inode& i, const SetAttr& change) {
  if (change.setMode) i.mode = change.mode & 07777;
  if (change.setUid) i.uid = change.uid;
  if (change.setGid) i.gid = change.gid;
  if (change.setAtime) i.atime = change.atime;
  if (change.setMtime) i.mtime = change.mtime;
  i.ctime = Timestamp::now();
}

Result<Inode> Filesystem::setattr(Ino ino, const SetAttr& change) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  const bool attrs =
      change.setMode || change.setUid || change.setGid || change.setAtime || change.setMtime;
  const Mutation apply = [&](Inode& i) {
    applyAttrs(i, change);
    return Status::ok();
  };
  // Attributes set after writes must not be overwritten by the commit of those writes (tar sets
  // mtime before close): writes pending here commit first, in the same dentry update as the
  // attributes when there is no truncate to make between them (one RADOS write, not two, for
  // tar's fchown after its writes).
  const bool withCommit = attrs && !change.setSize;
  TIERFS_ASSIGN_OR_RETURN(const bool committed, commitPending(*n, withCommit ? &apply : nullptr));
  const bool applied = committed && withCommit;
  if (change.setSize) {
    {
      std::lock_guard lock(n->mu);
      if (!n->dentry.inode.isFile()) return failure(Status::posix(EISDIR, "truncate"));
    }
    TIERFS_RETURN_IF_ERROR(writerFor(*n)->truncate(change.size));
    TIERFS_RETURN_IF_ERROR(commitNode(*n));
    dropIdleWriter(*n);
  }
  if (attrs && !applied) TIERFS_RETURN_IF_ERROR(statusOf(updateInode(*n, apply)));
  if (change.setMtime && withLocalSize(*n).isDir()) {
    TIERFS_RETURN_IF_ERROR(volume_.setDirMtime(ino, change.mtime));
  }
  return withLocalSize(*n);
}

Result<std::string> Filesystem::getxattr(Ino ino, std::string_view name) {
  if (name == kCacheStatsXattr && ino == kRootIno) {
    return toJson(cache_.stats(), listings_ ? listings_->stats() : cache::ListingCacheStats{},
                  sweepStats());
  }
  if (name == kControlSocketXattr && ino == kRootIno && !options_.controlSocket.empty()) {
    return options_.controlSocket;
  }
  // Only user.* attributes are stored (setxattr): the kernel's security.capability check before
  // every write needs no lock and no refresh.
  if (!name.starts_with(kUserPrefix)) return failure(Status::posix(ENODATA, std::string(name)));
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  if (name == kStoredSizeXattr) {
    Inode inode = withLocalSize(*n);
    TIERFS_ASSIGN_OR_RETURN(std::uint64_t stored, storedBytes(inode));
    return std::to_string(stored);
  }
  TIERFS_RETURN_IF_ERROR(refreshIfStale(*n));
  std::lock_guard lock(n->mu);
  auto it = n->dentry.inode.xattrs.find(std::string(name));
  if (it == n->dentry.inode.xattrs.end()) {
    return failure(Status::posix(ENODATA, std::string(name)));
  }
  return it->second;
}

Result<std::vector<std::string>> Filesystem::listxattr(Ino ino) {
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  TIERFS_RETURN_IF_ERROR(refreshIfStale(*n));
  std::lock_guard lock(n->mu);
  std::vector<std::string> names;
  for (const auto& [name, value] : n->dentry.inode.xattrs) names.push_back(name);
  return names;
}

namespace {

Status checkXattr(std::string_view name, std::string_view value) {
  const bool ours =
      name == kStoredSizeXattr || name == kCacheStatsXattr || name == kControlSocketXattr;
  if (!name.starts_with(kUserPrefix) || ours) {
    return Status::posix(ours ? EPERM : EOPNOTSUPP,
                         fmt::format("xattr '{}': only user.* attributes are stored", name));
  }
  if (name.size() > kMaxNameLength) return Status::posix(ERANGE, "xattr name too long");
  if (value.size() > kMaxXattrValue) return Status::posix(E2BIG, "xattr value too large");
  return Status::ok();
}

}  // namespace

Status Filesystem::putXattr(Inode& i, std::string_view name, std::string_view value, int flags) {
  TIERFS_RETURN_IF_ERROR(checkXattr(name, value));
  if (i.isSymlink()) return Status::posix(EPERM, "user.* xattrs on a symlink");  // as Linux
  auto it = i.xattrs.find(std::string(name));
  if ((flags & XATTR_CREATE) && it != i.xattrs.end()) return Status::posix(EEXIST, "xattr");
  if ((flags & XATTR_REPLACE) && it == i.xattrs.end()) return Status::posix(ENODATA, "xattr");
  std::size_t total = value.size() + name.size();
  for (const auto& [k, v] : i.xattrs) total += (k == name ? 0 : k.size() + v.size());
  if (total > kMaxXattrBytes) return Status::posix(ENOSPC, "xattrs of this inode are full");
  i.xattrs[std::string(name)] = value;
  i.ctime = Timestamp::now();
  return Status::ok();
}

Status Filesystem::setxattr(Ino ino, std::string_view name, std::string_view value, int flags) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_RETURN_IF_ERROR(checkXattr(name, value));  // before anything is read
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  return statusOf(updateInode(*n, [&](Inode& i) { return putXattr(i, name, value, flags); }));
}

Status Filesystem::removexattr(Ino ino, std::string_view name) {
  TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  return statusOf(updateInode(*n, [&](Inode& i) {
    if (i.xattrs.erase(std::string(name)) == 0) return Status::posix(ENODATA, "xattr");
    i.ctime = Timestamp::now();
    return Status::ok();
  }));
}

}  // namespace tierfs::fs
