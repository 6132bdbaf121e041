#pragma once

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/ChunkCache.h"
#include "cache/ListingCache.h"
#include "common/TimerQueue.h"
#include "fs/DataReader.h"
#include "fs/DatasetSweep.h"
#include "fs/DentryCache.h"
#include "fs/FileWriter.h"
#include "fs/InodeTable.h"
#include "fs/ReadAhead.h"
#include "fs/Volume.h"

namespace tierfs::fs {

struct FsOptions {
  // A dentry fetched longer ago than this is read again before open() and getattr, which gives
  // close-to-open consistency between nodes (the kernel caches attributes as long).
  Duration attrTimeout = std::chrono::seconds(1);
  std::uint64_t dirtyLimitPerFile = 64 << 20;  // unflushed bytes per file before writes wait
  // Chunks a commit no longer refers to are removed this long after it, so that a reader on
  // another node that opened the old content can finish (NFS gives such readers ESTALE).
  Duration gcDelay = std::chrono::seconds(10);
  std::uint32_t readdirPage = 1000;  // dentries per omap read of a directory listing
  // Dentries kept from whole-directory listings that answer bursts of lookups (DentryCache);
  // directories with more entries than dentryListMax are never listed for it. 0 disables.
  std::size_t dentryCacheEntries = 256 * 1024;
  std::size_t dentryListMax = 8192;
  // Directories with up to this many entries are kept in the listing cache, when there is one.
  std::size_t listingCacheMax = 65536;
  // After a revalidation (open, getattr, lookup) failed because the back end did not answer
  // (TimedOut or Unavailable), files and names already known are served from the dentries held,
  // without asking the store (a "stale hold"): a reader of cached files does not wait out a
  // back-end timeout at every open while the cluster is down. While the hold lasts, a probe (a
  // stat of the volume object) is sent at most every probeInterval, and only while calls come;
  // each failed probe extends the hold by staleHold, the first that succeeds ends it.
  Duration staleHold = std::chrono::seconds(5);
  Duration probeInterval = std::chrono::seconds(1);
  bool readOnly = false;
  std::string controlSocket;   // the daemon's control socket, shown in an xattr of the root
  ReadAheadOptions readAhead;  // its chunkSize is ignored: the volume's is used
  SweepOptions sweep;          // dataset sweeps (they need cache devices)
  // Records the chunk accesses of reads for `tierfs advise` (not owned; null: none).
  cache::SizingAdvisor* advisor = nullptr;
};

// Who makes a call: the owner of what it creates.
struct Caller {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
};

// What setattr changes: the fields whose flag is set.
struct SetAttr {
  bool setMode = false, setUid = false, setGid = false, setSize = false;
  bool setAtime = false, setMtime = false;
  std::uint32_t mode = 0, uid = 0, gid = 0;
  std::uint64_t size = 0;
  Timestamp atime, mtime;  // already resolved (UTIME_NOW is the caller's clock)
};

// One open() of a file.
struct OpenFile {
  std::shared_ptr<Node> node;
  bool writable = false;
  bool append = false;
  // The content this handle reads when the node has no unflushed changes: as of open(), then
  // each commit made on this node (so a reader never mixes two versions from other nodes).
  Inode snapshot;
  std::uint64_t seenCommits = 0;
  ReadAheadStream readAhead;
};

// One opendir(): a cursor over the directory's dentries, read one page at a time.
struct DirCursor {
  Ino dir = 0;
  Ino parent = 0;
  std::vector<std::pair<std::string, Dentry>> page;
  std::uint64_t pageStart = 0;  // index of page[0] among the directory's entries
  bool more = true;
  // With a listing cache: the directory's version when the listing began, whether the pages
  // come from the cache, and the entries read from the store so far, to keep in the cache if
  // the whole listing is read at that version.
  std::uint64_t version = 0;
  bool cached = false;
  bool collecting = false;
  std::vector<std::pair<std::string, std::string>> collected;
};

// A new file written whole before it has a name (Filesystem::stageFile).
struct NewFile {
  Inode inode;  // as staged: no content, the creator's owner and mode
  std::shared_ptr<FileWriter> writer;
  bool published = false;
  std::uint64_t storedBytes = 0;  // once published: what its chunks take in the store
};

// What a staged file is published with: `set`'s attributes (its size is ignored) and user.*
// xattrs.
struct NewFileAttrs {
  SetAttr set;
  std::vector<std::pair<std::string, std::string>> xattrs;
};

struct DirEntry {
  std::string_view name;
  Ino ino = 0;
  const Dentry* dentry = nullptr;  // null for "." and ".."
  std::uint64_t nextOffset = 0;    // the offset to continue after this entry
};

struct FsStat {
  std::uint64_t blockSize, blocks, blocksFree, blocksAvail, files, filesFree;
};

// The POSIX filesystem over a Volume, without the kernel: each call is what a FUSE request asks
// and returns a Status whose toErrno() is the reply (the FUSE adapter only translates). The
// kernel's lookup counts are kept in an InodeTable.
//
// Thread-safe: calls may come from many threads at once. They block on the store.
class Filesystem {
 public:
  // `listings` (may be null) keeps directory listings across calls and restarts.
  Filesystem(Volume& volume, cache::ChunkCache& cache, FsOptions options,
             cache::ListingCache* listings = nullptr);
  ~Filesystem();

  // Entries: each success counts one kernel lookup of the returned inode.
  Result<Inode> lookup(Ino parent, std::string_view name);
  void forget(Ino ino, std::uint64_t n);
  Result<Inode> mkdir(Ino parent, std::string_view name, std::uint32_t mode, Caller who);
  Result<Inode> symlink(Ino parent, std::string_view name, std::string_view target, Caller who);
  Result<std::string> readlink(Ino ino);
  Status unlink(Ino parent, std::string_view name);
  Status rmdir(Ino parent, std::string_view name);
  Status rename(Ino parent, std::string_view name, Ino newParent, std::string_view newName,
                unsigned flags);

  // Attributes. A file with unflushed changes shows its local size.
  Result<Inode> getattr(Ino ino);
  Result<Inode> setattr(Ino ino, const SetAttr& change);
  Result<std::string> getxattr(Ino ino, std::string_view name);
  Result<std::vector<std::string>> listxattr(Ino ino);
  Status setxattr(Ino ino, std::string_view name, std::string_view value, int flags);
  Status removexattr(Ino ino, std::string_view name);
  // The store's usage. Once known, answered at once from the last known figures, which a
  // background refresh renews when they are older than a second: df never waits for a back end
  // that does not answer, and shows the last figures it gave.
  Result<FsStat> statfs();

  // Files.
  Result<std::pair<Inode, std::unique_ptr<OpenFile>>> create(Ino parent, std::string_view name,
                                                             std::uint32_t mode, int flags,
                                                             Caller who);
  // `keepCache` says the kernel's cached pages of the file are still its content.
  Result<std::unique_ptr<OpenFile>> open(Ino ino, int flags, bool* keepCache);
  Result<Bytes> read(OpenFile& file, std::uint64_t offset, std::uint64_t length);
  // A read without an open file (a read-only mount answers OPEN with ENOSYS).
  Result<Bytes> readInode(Ino ino, std::uint64_t offset, std::uint64_t size);
  // The same two answered through `done`, exactly once: at once when the bytes are at hand,
  // else from the thread a chunk fetch completes on, so that the FUSE thread need not wait for
  // it. `done` must not block.
  void read(OpenFile& file, std::uint64_t offset, std::uint64_t length,
            backends::Callback<Bytes> done);
  void readInode(Ino ino, std::uint64_t offset, std::uint64_t size, backends::Callback<Bytes> done);
  Result<std::size_t> write(OpenFile& file, std::uint64_t offset, std::string_view data);
  Status flush(OpenFile& file);  // commits (close-to-open)
  Status fsync(OpenFile& file);  // commits; durable in the store when it returns
  Status release(std::unique_ptr<OpenFile> file);

  // A file written whole before it has a name (tierfs import). Its chunks go to the store as it
  // is written; publish() then gives it its name, content and attributes in one guarded update
  // of the directory: other nodes see the whole file or none, and it costs one dentry write
  // where create, write and setattr make two, and a round trip before the first write.
  // publish() fails with EEXIST when the name is taken (the staged file stays, to publish
  // again); a staged file not published is given to discard(), which removes its chunks.
  // A published file counts one kernel lookup, as create() does.
  Result<std::unique_ptr<NewFile>> stageFile(Ino parent, std::uint32_t mode, Caller who);
  Status writeNew(NewFile& file, std::uint64_t offset, std::string_view data);
  Result<Inode> publish(NewFile& file, Ino parent, std::string_view name,
                        const NewFileAttrs& attrs);
  void discard(NewFile& file);

  // Directories. readdir gives entries from `offset` (0 at the start) while `accept` takes them.
  Result<std::unique_ptr<DirCursor>> opendir(Ino ino);
  Status readdir(DirCursor& cursor, std::uint64_t offset,
                 const std::function<bool(const DirEntry&)>& accept);
  // The attributes readdirplus hands out for a dentry: a file with unflushed changes here shows
  // its local size (the kernel would otherwise take the stored one).
  Inode entryAttributes(const Dentry& dentry) const;
  // Counts a kernel lookup for an entry readdirplus handed out.
  void rememberEntry(Ino parent, const std::string& name, const Dentry& dentry);

  // Commits every file with unflushed changes and runs the pending chunk removals: unmount.
  Status flushAll();

  // Calls `fn` (on FUSE threads: it must be quick) with each file opened from now on, or on a
  // read-only mount (no OPEN) each file read from its start, until the token is dropped.
  using AccessFn = std::function<void(Ino)>;
  std::shared_ptr<void> watchAccess(AccessFn fn);

  const Volume& volume() const { return volume_; }
  std::size_t nodeCount() const { return nodes_.size(); }
  ReadAhead::Counters readAheadCounters() const { return readAhead_.counters(); }
  DatasetSweep::Stats sweepStats() const {
    return sweep_ ? sweep_->stats() : DatasetSweep::Stats{};
  }
  // Bytes written on this node and not yet uploaded to the back end.
  std::uint64_t unflushedBytes() const { return unflushedBytes_.load(std::memory_order_relaxed); }

 private:
  struct Commit {
    Inode before, after;
  };
  using Mutation = std::function<Status(Inode&)>;

  Result<std::shared_ptr<Node>> node(Ino ino) const;
  Result<Dentry> childDentry(Ino parent, std::string_view name);
  std::optional<DentryCache::Hit> listedDentry(Ino parent, const std::string& name);
  Result<DirPage> listPage(DirCursor& cursor, const std::string& after);
  Result<DirPage> storePage(DirCursor& cursor, const std::string& after);
  Status refreshIfStale(Node& node);
  // Whether a failed revalidation may use what is known instead: a retryable error (the back end
  // did not answer) starts a stale hold (FsOptions::staleHold). Other errors are returned.
  Status keepStaleOn(const Status& error);
  bool inStaleHold();  // also sends a probe when one is due
  struct StaleState {  // shared with the probe in flight (which may end after the Filesystem)
    std::atomic<Clock::rep> until{0};     // end of the stale hold (Clock ticks; 0: none)
    std::atomic<Clock::rep> probedAt{0};  // when the last probe was sent
    std::atomic<bool> probing{false};
  };
  // statfs' last known answer, shared with the background refresh in flight (which may end after
  // the Filesystem). statfs answers from it at once once there is one.
  struct UsageState {
    std::mutex mu;  // guards the fields below
    std::optional<FsStat> last;
    Clock::time_point fetchedAt;
    bool refreshing = false;
  };
  Result<Commit> updateInode(Node& node, const Mutation& mutate);
  static void applyAttrs(Inode& inode, const SetAttr& change);  // all but the size
  // Sets a user.* xattr in `inode` (setxattr's checks and `flags`).
  static Status putXattr(Inode& inode, std::string_view name, std::string_view value, int flags);
  Result<Inode> addEntry(Ino parent, std::string_view name, Inode inode);
  // Files published into one directory at once share a dentry update (a group commit): while
  // one update is under way, the files that come meanwhile wait for it and go in the next.
  struct Publication {
    std::string name;
    Inode inode;
    std::optional<Result<Inode>> result;  // set when done (under publishMu_)
  };
  struct PublishQueue {
    bool busy = false;  // an update is under way
    std::vector<Publication*> waiting;
  };
  Result<Inode> publishInOrder(Ino parent, Publication& mine);
  std::vector<Result<Inode>> publishBatch(Ino parent, const std::vector<Publication*>& batch);
  Result<Inode> newInode(Ino parent, FileType type, std::uint32_t mode, Caller who);
  struct Swap {
    std::string moved;     // the encoded dentry to put at the target
    std::string replaced;  // the encoded dentry it replaces there ("" = none)
  };
  Status renameAcross(Ino parent, const std::string& name, const std::string& source, Ino newParent,
                      const std::string& newName, const Swap& swap, const Timestamp& at);
  void afterRemoval(const Dentry& gone);
  std::optional<Dentry> knownFile(Ino parent, std::string_view name);
  struct RenameEnds {
    Dentry src;
    std::optional<Dentry> dst;  // none: the target name is absent
  };
  Status renameFrom(Ino parent, std::string_view name, Ino newParent, std::string_view newName,
                    unsigned flags, const RenameEnds& ends);
  Status commitNode(Node& node);
  // Commits the node's pending writes with `also` applied to the same dentry update; false
  // (nothing done) when there is nothing to commit.
  Result<bool> commitPending(Node& node, const Mutation* also);
  std::shared_ptr<FileWriter> writerFor(Node& node);
  WriterContext writerContext();    // what every FileWriter of this Filesystem writes through
  void dropIdleWriter(Node& node);  // no open file and nothing unflushed: free the buffers
  void dropGarbage(Ino ino, const std::vector<Extent>& before, const std::vector<Extent>& after,
                   const std::vector<PieceId>& written);
  std::vector<PieceId> piecesWritten(const FileWriter::Changes& changes) const;
  void removePiecesLater(Ino ino, std::vector<PieceId> pieces);
  void runGc(std::uint64_t id);
  Inode withLocalSize(Node& node);
  Status withDirTimes(Inode& inode);
  // This node changed the directory's entries at `at` (the mtime updateDir wrote).
  void entriesChanged(Ino dir, const Timestamp& at);
  Result<std::uint64_t> storedBytes(const Inode& inode);
  Status checkWritable() const;
  void noteAccess(Node& node);
  std::string datasetOf(Ino ino) const;  // the top-level directory a file is under

  Volume& volume_;
  cache::ChunkCache& cache_;
  cache::ListingCache* const listings_;
  const FsOptions options_;
  std::atomic<std::uint64_t> unflushedBytes_{0};  // before nodes_: their writers update it
  DataReader reader_;
  ReadAhead readAhead_;  // after reader_, which it uses
  InodeTable nodes_;
  DentryCache dentries_;
  std::mutex watchMu_;  // guards watchers_; held while they run
  std::list<AccessFn> watchers_;
  TreeCache trees_;
  std::unique_ptr<DatasetSweep> sweep_;  // after trees_, which it uses
  const std::shared_ptr<StaleState> stale_ = std::make_shared<StaleState>();
  std::shared_ptr<UsageState> usage_ = std::make_shared<UsageState>();
  std::mutex publishMu_;  // guards publishing_
  std::condition_variable publishDone_;
  std::map<Ino, PublishQueue> publishing_;  // by directory
  std::mutex gcMu_;                         // guards the two below
  std::uint64_t nextGcId_ = 1;
  std::map<std::uint64_t, std::pair<Ino, std::vector<PieceId>>> gcPending_;  // by job id
  TimerQueue gcTimers_;  // last: stopped first, before the state its callbacks use
};

}  // namespace tierfs::fs
