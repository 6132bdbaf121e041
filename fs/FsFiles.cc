// Filesystem: file contents — create, open, read, write, commit (flush/fsync/release) and the
// removal of chunks no commit refers to any more.
#include <fcntl.h>
#include <fmt/format.h>

#include <cerrno>
#include <condition_variable>

#include "backends/SyncStore.h"
#include "fs/Filesystem.h"

namespace tierfs::fs {

Filesystem::Filesystem(Volume& volume, cache::ChunkCache& cache, FsOptions options,
                       cache::ListingCache* listings)
    : volume_(volume),
      cache_(cache),
      listings_(listings),
      options_(options),
      reader_(cache, volume.record().chunkSize),
      readAhead_(reader_, options.readAhead),
      dentries_(options.attrTimeout, options.dentryCacheEntries),
      trees_(volume, cache),
      sweep_(options.sweep.enabled ? std::make_unique<DatasetSweep>(trees_, cache, options.sweep)
                                   : nullptr) {
  // The root's dentry lives in the volume object; it is the one node the kernel never looks up.
  auto root = volume_.readDentry(Location::of(0, ""));
  Dentry d;
  d.inode.ino = kRootIno;
  d.inode.type = FileType::kDirectory;
  if (root && *root) d = std::move(**root);
  auto n = nodes_.remember(0, std::string(kRootKey), d, true);
  std::lock_guard lock(n->mu);
  if (!root || !*root) n->fetchedAt = {};  // read again on first use
  reader_.boundFetchesWhile([this] { return inStaleHold(); });
  if (options_.advisor) {
    reader_.recordAccesses(options_.advisor, [this](Ino ino) { return datasetOf(ino); });
  }
}

// Walks up the parents the inode table knows: the ancestor whose parent is the root names the
// dataset. "" for a file in the root itself, or when an ancestor is no longer known.
std::string Filesystem::datasetOf(Ino ino) const {
  constexpr int kMaxDepth = 256;  // a loop guard; real trees are far shallower
  std::string name;
  int depth = 0;
  for (; depth < kMaxDepth && ino != kRootIno; ++depth) {
    auto n = nodes_.find(ino);
    if (!n) return "";
    std::lock_guard lock(n->mu);
    name = n->name;
    ino = n->parent;
  }
  return ino == kRootIno && depth > 1 ? name : "";  // depth 1: the file itself is in the root
}

Filesystem::~Filesystem() { (void)flushAll(); }

WriterContext Filesystem::writerContext() {
  return {volume_, cache_, reader_, options_.dirtyLimitPerFile, &unflushedBytes_};
}

std::shared_ptr<FileWriter> Filesystem::writerFor(Node& n) {
  std::lock_guard lock(n.mu);
  if (!n.writer) n.writer = std::make_shared<FileWriter>(writerContext(), n.dentry.inode);
  return n.writer;
}

Result<std::pair<Inode, std::unique_ptr<OpenFile>>> Filesystem::create(Ino parent,
                                                                       std::string_view name,
                                                                       std::uint32_t mode,
                                                                       int flags, Caller who) {
  TIERFS_ASSIGN_OR_RETURN(Inode file, newInode(parent, FileType::kRegular, mode, who));
  auto added = addEntry(parent, name, file);
  if (!added && added.error().toErrno() == EEXIST && !(flags & O_EXCL)) {
    TIERFS_ASSIGN_OR_RETURN(Inode existing, lookup(parent, name));
    bool keep = false;
    TIERFS_ASSIGN_OR_RETURN(auto handle, open(existing.ino, flags, &keep));
    return std::make_pair(existing, std::move(handle));
  }
  TIERFS_RETURN_IF_ERROR(statusOf(added));
  bool keep = false;
  TIERFS_ASSIGN_OR_RETURN(auto handle, open(added->ino, flags, &keep));
  return std::make_pair(*added, std::move(handle));
}

Result<std::unique_ptr<OpenFile>> Filesystem::open(Ino ino, int flags, bool* keepCache) {
  TIERFS_ASSIGN_OR_RETURN(auto n, node(ino));
  const int access = flags & O_ACCMODE;
  if (access != O_RDONLY) TIERFS_RETURN_IF_ERROR(checkWritable());
  TIERFS_RETURN_IF_ERROR(refreshIfStale(*n));  // close-to-open: see other nodes' commits
  noteAccess(*n);
  auto file = std::make_unique<OpenFile>();
  file->node = n;
  file->writable = access != O_RDONLY;
  file->append = flags & O_APPEND;
  if (withLocalSize(*n).isDir()) return failure(Status::posix(EISDIR, "open of a directory"));
  if (file->writable && (flags & O_TRUNC)) {  // the kernel leaves O_TRUNC to us (atomic_o_trunc)
    TIERFS_RETURN_IF_ERROR(writerFor(*n)->truncate(0));
  }
  std::lock_guard lock(n->mu);
  file->snapshot = n->dentry.inode;
  file->seenCommits = n->localCommits;
  *keepCache = n->pageCacheVersion == file->snapshot.version;
  n->pageCacheVersion = file->snapshot.version;
  ++n->openFiles;
  return file;
}

Result<Bytes> Filesystem::read(OpenFile& file, std::uint64_t offset, std::uint64_t length) {
  return backends::waitFor<Bytes>([&](auto done) { read(file, offset, length, std::move(done)); });
}

Result<Bytes> Filesystem::readInode(Ino ino, std::uint64_t offset, std::uint64_t size) {
  return backends::waitFor<Bytes>(
      [&](auto done) { readInode(ino, offset, size, std::move(done)); });
}

void Filesystem::read(OpenFile& file, std::uint64_t offset, std::uint64_t length,
                      backends::Callback<Bytes> done) {
  Node& n = *file.node;
  std::shared_ptr<FileWriter> writer;
  // Copies: another thread reading this handle may adopt a newer snapshot meanwhile.
  std::vector<Extent> extents;
  std::uint64_t size = 0;
  {
    std::lock_guard lock(n.mu);
    writer = n.writer;
    if (!writer && file.seenCommits != n.localCommits) {  // adopt what this node committed
      file.snapshot = n.dentry.inode;
      file.seenCommits = n.localCommits;
    }
    if (!writer) {
      extents = file.snapshot.extents;
      size = file.snapshot.size;
    }
  }
  if (writer) {
    Result<std::string> local = writer->read(offset, length);
    return done(local ? Result<Bytes>(Bytes(std::move(*local))) : failure(local.error()));
  }
  readAhead_.onRead(file.readAhead, n.ino, extents, size, offset, length);
  reader_.read(n.ino, extents, size, offset, length, std::move(done));
}

void Filesystem::readInode(Ino ino, std::uint64_t offset, std::uint64_t size,
                           backends::Callback<Bytes> done) {
  auto found = node(ino);
  if (!found) return done(failure(found.error()));
  Node& n = **found;
  Inode inode;
  {
    std::lock_guard lock(n.mu);
    inode = n.dentry.inode;
  }
  if (!inode.isFile()) return done(failure(Status::posix(EISDIR, "read of a directory")));
  if (offset == 0) noteAccess(n);
  readAhead_.onRead(n.readAhead, ino, inode.extents, inode.size, offset, size);
  reader_.read(ino, inode.extents, inode.size, offset, size, std::move(done));
}

Result<std::size_t> Filesystem::write(OpenFile& file, std::uint64_t offset, std::string_view data) {
  if (!file.writable) return failure(Status::posix(EBADF, "file not open for writing"));
  auto writer = writerFor(*file.node);
  if (file.append) offset = writer->size();
  TIERFS_RETURN_IF_ERROR(writer->write(offset, data));
  return data.size();
}

Status Filesystem::flush(OpenFile& file) {
  if (!file.writable) return Status::ok();
  return commitNode(*file.node);
}

Status Filesystem::fsync(OpenFile& file) { return commitNode(*file.node); }

Status Filesystem::release(std::unique_ptr<OpenFile> file) {
  Node& n = *file->node;
  Status s = file->writable ? commitNode(n) : Status::ok();
  std::vector<Extent> orphaned;
  std::vector<PieceId> orphanedWrites;
  {
    std::lock_guard lock(n.mu);
    --n.openFiles;
    if (n.openFiles == 0 && n.unlinked && n.dentry.inode.isFile()) {  // the last close
      orphaned = n.dentry.inode.extents;
      if (n.writer) orphanedWrites = piecesWritten(n.writer->changes());
      n.writer.reset();
    }
    if (n.openFiles == 0 && n.writer && !n.writer->hasChanges()) n.writer.reset();
  }
  if (!orphaned.empty() || !orphanedWrites.empty()) {
    dropGarbage(n.ino, orphaned, {}, orphanedWrites);
  }
  nodes_.releaseIfUnused(n.ino);
  return s;
}

void Filesystem::dropIdleWriter(Node& n) {
  std::lock_guard lock(n.mu);
  if (n.openFiles == 0 && n.writer && !n.writer->hasChanges()) n.writer.reset();
}

// Uploads the node's unflushed changes and switches its dentry to them in one guarded update.
Status Filesystem::commitNode(Node& n) { return statusOf(commitPending(n, nullptr)); }

Result<bool> Filesystem::commitPending(Node& n, const Mutation* also) {
  std::lock_guard commitLock(n.commitMu);
  std::shared_ptr<FileWriter> writer;
  bool unlinked = false;
  {
    std::lock_guard lock(n.mu);
    writer = n.writer;
    unlinked = n.unlinked;
  }
  if (!writer) return false;
  TIERFS_RETURN_IF_ERROR(writer->drain());
  FileWriter::Changes changes = writer->changes();
  if (changes.ops.empty()) return false;
  // Removed while open: nobody can open it again, so the data stays with the open files until
  // the last one closes (release() then removes its chunks).
  if (unlinked) return false;
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t version, volume_.newId());
  TIERFS_ASSIGN_OR_RETURN(Commit c, updateInode(n, [&](Inode& i) {
                            FileWriter::replay(reader_.chunkMap(), changes.ops, i);
                            i.mtime = i.ctime = Timestamp::now();
                            i.version = version;
                            return also ? (*also)(i) : Status::ok();
                          }));
  writer->committed(changes, c.after);
  std::vector<PieceId> written = piecesWritten(changes);
  {
    std::lock_guard lock(n.mu);
    ++n.localCommits;
    n.pageCacheVersion = version;  // the kernel's pages hold what this node wrote
  }
  dropGarbage(n.ino, c.before.extents, c.after.extents, written);
  return true;
}

std::vector<PieceId> Filesystem::piecesWritten(const FileWriter::Changes& changes) const {
  std::vector<PieceId> out;
  for (const auto& op : changes.ops) {
    if (const Extent* run = std::get_if<Extent>(&op)) {
      auto p = reader_.chunkMap().pieces({*run});
      out.insert(out.end(), p.begin(), p.end());
    }
  }
  return out;
}

// Removes (after the grace delay) the pieces `before` and `written` refer to that `after` does
// not.
void Filesystem::dropGarbage(Ino ino, const std::vector<Extent>& before,
                             const std::vector<Extent>& after,
                             const std::vector<PieceId>& written) {
  const ChunkMap& map = reader_.chunkMap();
  std::vector<PieceId> candidates = map.pieces(before);
  candidates.insert(candidates.end(), written.begin(), written.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<PieceId> kept = map.pieces(after);
  std::vector<PieceId> garbage;
  std::set_difference(candidates.begin(), candidates.end(), kept.begin(), kept.end(),
                      std::back_inserter(garbage));
  if (!garbage.empty()) removePiecesLater(ino, std::move(garbage));
}

void Filesystem::removePiecesLater(Ino ino, std::vector<PieceId> pieces) {
  std::lock_guard lock(gcMu_);
  const std::uint64_t id = nextGcId_++;
  gcPending_.emplace(id, std::make_pair(ino, std::move(pieces)));
  gcTimers_.schedule(Clock::now() + options_.gcDelay, [this, id] { runGc(id); });
}

void Filesystem::runGc(std::uint64_t id) {
  std::pair<Ino, std::vector<PieceId>> job;
  {
    std::lock_guard lock(gcMu_);
    auto it = gcPending_.find(id);
    if (it == gcPending_.end()) return;  // flushAll() took it
    job = std::move(it->second);
    gcPending_.erase(it);
  }
  for (const PieceId& p : job.second) {
    // Best effort: a chunk left behind is an orphan that fsck --repair removes.
    cache_.remove({job.first, p.version, p.piece}, [](Result<std::uint64_t>) {});
  }
}

Result<std::uint64_t> Filesystem::storedBytes(const Inode& inode) {
  std::vector<PieceId> pieces = reader_.chunkMap().pieces(inode.extents);
  std::mutex mu;
  std::condition_variable cv;
  std::size_t pending = pieces.size();
  std::uint64_t total = 0;
  Status status;
  for (const PieceId& p : pieces) {
    cache_.storedSize({inode.ino, p.version, p.piece}, [&](Result<std::uint64_t> r) {
      std::lock_guard lock(mu);
      if (r) total += *r;
      if (!r && status.isOk()) status = r.error();
      if (--pending == 0) cv.notify_all();
    });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return pending == 0; });
  if (!status.isOk()) return failure(status);
  return total;
}

Status Filesystem::flushAll() {
  Status first;
  std::vector<std::shared_ptr<Node>> dirty = nodes_.withWriters();
  for (auto& n : dirty) {
    Status s = commitNode(*n);
    if (first.isOk() && !s.isOk()) first = s;
  }
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(gcMu_);
    for (const auto& [id, job] : gcPending_) ids.push_back(id);
  }
  for (std::uint64_t id : ids) runGc(id);
  return first;
}

std::shared_ptr<void> Filesystem::watchAccess(AccessFn fn) {
  std::lock_guard lock(watchMu_);
  auto it = watchers_.insert(watchers_.end(), std::move(fn));
  return std::shared_ptr<void>(nullptr, [this, it](void*) {
    std::lock_guard lock(watchMu_);
    watchers_.erase(it);
  });
}

void Filesystem::noteAccess(Node& n) {
  if (sweep_) {
    Ino parent = 0, grandparent = 0;
    {
      std::lock_guard lock(n.mu);
      parent = n.parent;
    }
    if (auto p = nodes_.find(parent)) {
      std::lock_guard lock(p->mu);
      grandparent = p->parent;
    }
    sweep_->accessed(n.ino, parent, grandparent);
  }
  std::lock_guard lock(watchMu_);
  for (const AccessFn& fn : watchers_) fn(n.ino);
}

}  // namespace tierfs::fs
