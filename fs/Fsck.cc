// fsck: rename intent recovery, the namespace walk, the object listing and the repairs.
#include "fs/Fsck.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "backends/SyncStore.h"
#include "cache/ChunkKey.h"
#include "fs/ChunkMap.h"

namespace tierfs::fs {
namespace {

using backends::SyncStore;
using backends::WriteOp;
using cache::ChunkKey;

constexpr std::string_view kLostAndFound = "lost+found";
constexpr std::size_t kNamesInDetail = 4;  // chunk names listed in one finding

std::int64_t nowOr(std::int64_t nowSec) { return nowSec != 0 ? nowSec : Timestamp::now().sec; }

std::string joinPath(std::string_view dir, std::string_view name) {
  return dir == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", dir, name);
}

// The inode of a directory object name, in the one spelling dirObject() produces.
std::optional<Ino> dirObjectIno(std::string_view name) {
  if (!name.starts_with("d.")) return std::nullopt;
  Ino ino = 0;
  auto [ptr, ec] = std::from_chars(name.data() + 2, name.data() + name.size(), ino, 16);
  if (ec != std::errc() || ptr != name.data() + name.size() || dirObject(ino) != name) {
    return std::nullopt;
  }
  return ino;
}

std::optional<std::uint64_t> parseHexId(std::string_view text) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// Equal apart from ctime, which a rename sets on the inode it moves.
bool sameButCtime(Inode a, Inode b) {
  a.ctime = b.ctime = {};
  return a == b;
}

// A directory entry; nullopt when it or its directory object is absent.
Result<std::optional<Dentry>> readEntry(Volume& volume, Ino dir, const std::string& name) {
  auto r = volume.readDentry(Location::of(dir, name));
  if (!r && r.error().isNotFound()) return std::optional<Dentry>();
  return r;
}

// The removing mark of a directory object; "" when unset or when the object is gone.
Result<std::string> removingMark(SyncStore& store, Ino dir) {
  auto mark = store.getXattr(dirObject(dir), std::string(kRemovingXattr));
  if (!mark && mark.error().isNotFound()) return std::string();
  return mark;
}

// ---------------------------------------------------------------- rename intents

class IntentRecovery {
 public:
  IntentRecovery(Volume& volume, bool apply)
      : volume_(volume), store_(volume.store()), apply_(apply) {}

  // Decides (and with apply_, does) what the intent needs; `out` says what. Store errors are
  // returned with `out` describing how far it got.
  Status recover(const std::string& key, const RenameIntent& intent, IntentOutcome& out) {
    TIERFS_ASSIGN_OR_RETURN(Inode moved, decodeInode(intent.moved));
    std::optional<Inode> replaced;
    if (!intent.replaced.empty()) {
      TIERFS_ASSIGN_OR_RETURN(replaced, decodeInode(intent.replaced));
    }
    TIERFS_ASSIGN_OR_RETURN(auto target, readEntry(volume_, intent.dstDir, intent.dstName));
    TIERFS_ASSIGN_OR_RETURN(auto source, readEntry(volume_, intent.srcDir, intent.srcName));
    const std::string what = fmt::format(
        "rename of inode {:x} from entry '{}' of {} to entry '{}' of {}", moved.ino, intent.srcName,
        dirObject(intent.srcDir), intent.dstName, dirObject(intent.dstDir));
    const bool targetHolds = target && target->inode.ino == moved.ino;
    const bool sourceHolds = source && source->inode.ino == moved.ino;
    if (targetHolds) {
      out.action = IntentOutcome::Action::kRolledForward;
      if (sourceHolds) {
        // Normally the source entry is the moved inode before the rename set its ctime. If one
        // entry changed since (a commit through it), that one has the newer content.
        const bool sourceChanged = !sameButCtime(source->inode, moved);
        const bool targetChanged = !sameButCtime(target->inode, moved);
        const bool same = sameButCtime(source->inode, target->inode);
        if (sourceChanged && targetChanged && !same) {
          out.action = IntentOutcome::Action::kConflict;
          out.detail = fmt::format(
              "{}: both entries hold the inode and both changed after the rename began; "
              "left for a person (remove one of them, then clear journal key {})",
              what, key);
          return Status::ok();
        }
        const bool carry = sourceChanged && !same;
        out.detail = fmt::format("{}: the target holds the inode; {} the source entry", what,
                                 apply_ ? "removed" : "would remove");
        if (carry) {
          out.detail +=
              fmt::format(", whose content is newer than the target's and {} to the target",
                          apply_ ? "was carried" : "would be carried");
        }
        if (apply_) TIERFS_RETURN_IF_ERROR(rollForward(intent, *target, *source, carry));
      } else {
        out.detail =
            fmt::format("{}: the target holds the inode and the source no longer does", what);
      }
      if (replaced && replaced->isDir() && replaced->ino != moved.ino && apply_) {
        TIERFS_RETURN_IF_ERROR(dropReplacedDir(replaced->ino, out));
      }
    } else {
      out.action = IntentOutcome::Action::kRolledBack;
      out.detail =
          sourceHolds
              ? fmt::format("{}: the target does not hold the inode; the source still does", what)
              : fmt::format(
                    "{}: neither entry holds the inode any more (later operations "
                    "moved it on)",
                    what);
      // The rename sealed a directory it was to replace: it stays, so it must accept entries.
      if (replaced && replaced->isDir() && target && target->inode.ino == replaced->ino) {
        TIERFS_ASSIGN_OR_RETURN(std::string mark, removingMark(store_, replaced->ino));
        if (!mark.empty()) {
          out.detail += fmt::format("; {} the removing mark of the directory it was to replace",
                                    apply_ ? "cleared" : "would clear");
          if (apply_) TIERFS_RETURN_IF_ERROR(volume_.unsealDir(replaced->ino));
        }
      }
    }
    if (!apply_) return Status::ok();
    TIERFS_RETURN_IF_ERROR(volume_.clearIntent(key));
    out.applied = true;
    return Status::ok();
  }

 private:
  Status rollForward(const RenameIntent& intent, const Dentry& target, const Dentry& source,
                     bool carry) {
    if (carry) {  // a commit reached the source entry after the target was written
      Inode carried = source.inode;
      carried.ctime = std::max(source.inode.ctime, target.inode.ctime);
      TIERFS_RETURN_IF_ERROR(volume_.updateDir(
          dirObject(intent.dstDir), {{intent.dstName, target.encoded, encodeInode(carried)}}));
    }
    return volume_.updateDir(dirObject(intent.srcDir), {{intent.srcName, source.encoded, ""}});
  }

  // The directory a finished rename replaced: sealed and empty, no entry refers to it.
  Status dropReplacedDir(Ino dir, IntentOutcome& out) {
    TIERFS_ASSIGN_OR_RETURN(std::string mark, removingMark(store_, dir));
    auto page = store_.omapList(dirObject(dir), {.maxEntries = 1});
    if (!page && page.error().isNotFound()) return Status::ok();
    TIERFS_RETURN_IF_ERROR(statusOf(page));
    if (mark.empty() || !page->entries.empty()) return Status::ok();  // fsck sees to it
    TIERFS_RETURN_IF_ERROR(volume_.dropDirObject(dir));
    out.detail += fmt::format("; removed {}, the empty directory it replaced", dirObject(dir));
    return Status::ok();
  }

  Volume& volume_;
  SyncStore store_;
  bool apply_;
};

}  // namespace

std::string_view actionName(IntentOutcome::Action action) {
  switch (action) {
    case IntentOutcome::Action::kRecent:
      return "recent";
    case IntentOutcome::Action::kRolledForward:
      return "roll-forward";
    case IntentOutcome::Action::kRolledBack:
      return "roll-back";
    case IntentOutcome::Action::kConflict:
      return "conflict";
    case IntentOutcome::Action::kUndecodable:
      return "undecodable";
    case IntentOutcome::Action::kFailed:
      return "failed";
  }
  return "?";
}

Status recoverRenameIntents(Volume& volume, std::chrono::seconds minAge,
                            std::vector<IntentOutcome>* outcomes,
                            const IntentRecoveryOptions& options) {
  TIERFS_ASSIGN_OR_RETURN(auto intents, volume.listIntents());
  const std::int64_t now = nowOr(options.nowSec);
  IntentRecovery recovery(volume, options.apply);
  Status first;
  for (const auto& [key, encoded] : intents) {
    IntentOutcome out;
    out.key = key;
    auto intent = decodeIntent(encoded);
    if (!intent) {
      out.action = IntentOutcome::Action::kUndecodable;
      out.detail = intent.error().toString();
    } else if (out.intent = *intent; intent->createdSec > now - minAge.count() &&
                                     options.ownerLiveness(intent->owner) != Liveness::kGone) {
      out.action = IntentOutcome::Action::kRecent;
      out.detail = fmt::format("rename of entry '{}' of {} to entry '{}' of {}, {} s old",
                               intent->srcName, dirObject(intent->srcDir), intent->dstName,
                               dirObject(intent->dstDir), now - intent->createdSec);
    } else if (Status s = recovery.recover(key, *intent, out); !s.isOk()) {
      // An entry that does not decode needs a person; a store error, another try later.
      out.action = s.dataLoss() ? IntentOutcome::Action::kConflict : IntentOutcome::Action::kFailed;
      out.applied = false;
      out.detail = fmt::format("{}{}{}", out.detail, out.detail.empty() ? "" : ": ", s.toString());
      if (first.isOk() && !s.dataLoss()) first = s;
    }
    if (out.intent && out.action != IntentOutcome::Action::kRecent &&
        out.intent->createdSec > now - minAge.count()) {
      out.detail += fmt::format(" (before the minimum age: the daemon that began it, {}, is gone)",
                                out.intent->owner);
    }
    if (outcomes != nullptr) outcomes->push_back(std::move(out));
  }
  return first;
}

// ---------------------------------------------------------------- fsck

std::string_view kindName(FindingKind kind) {
  switch (kind) {
    case FindingKind::kBadVolume:
      return "bad-volume";
    case FindingKind::kIdAllocatorBehind:
      return "id-allocator-behind";
    case FindingKind::kMissingDirObject:
      return "missing-dir-object";
    case FindingKind::kMissingChunk:
      return "missing-chunk";
    case FindingKind::kBadChunk:
      return "bad-chunk";
    case FindingKind::kShortChunk:
      return "short-chunk";
    case FindingKind::kUndecodableDentry:
      return "undecodable-dentry";
    case FindingKind::kDuplicateIno:
      return "duplicate-ino";
    case FindingKind::kRemovingMark:
      return "removing-mark";
    case FindingKind::kOrphanChunk:
      return "orphan-chunk";
    case FindingKind::kUnreachableDir:
      return "unreachable-dir";
    case FindingKind::kRenameIntent:
      return "rename-intent";
    case FindingKind::kUndecodableIntent:
      return "undecodable-intent";
    case FindingKind::kForeignObject:
      return "foreign-object";
  }
  return "?";
}

std::string_view stateName(FsckFinding::State state) {
  switch (state) {
    case FsckFinding::State::kFound:
      return "found";
    case FsckFinding::State::kRepaired:
      return "repaired";
    case FsckFinding::State::kReportOnly:
      return "not-repaired";
    case FsckFinding::State::kRecent:
      return "recent";
    case FsckFinding::State::kNote:
      return "note";
  }
  return "?";
}

std::uint64_t FsckReport::problems() const {
  return static_cast<std::uint64_t>(
      std::count_if(findings.begin(), findings.end(), [](const auto& f) { return f.isProblem(); }));
}

std::uint64_t FsckReport::repaired() const {
  return static_cast<std::uint64_t>(
      std::count_if(findings.begin(), findings.end(),
                    [](const auto& f) { return f.state == FsckFinding::State::kRepaired; }));
}

namespace {

using State = FsckFinding::State;

// (--deep) Reads referenced chunks a few at a time and checks each one's frame and raw length.
// The reads run in the store; decoding runs on the checking thread.
class DeepVerifier {
 public:
  DeepVerifier(backends::ObjectStore& store, unsigned window, FsckReport& report)
      : store_(store), window_(std::max(1u, window)), report_(report) {}
  ~DeepVerifier() { drain(); }

  void submit(const ChunkKey& key, std::uint64_t needed, std::string path) {
    std::unique_lock lock(mu_);
    for (;;) {
      processLocked(lock);
      if (inFlight_ < window_) break;
      cv_.wait(lock, [&] { return !done_.empty(); });
    }
    ++inFlight_;
    lock.unlock();
    Pending p{key, needed, std::move(path)};
    store_.read(key.objectName(), 0, backends::kToEnd,
                [this, p = std::move(p)](Result<Bytes> bytes) mutable {
                  std::lock_guard lock(mu_);
                  done_.emplace_back(std::move(p), std::move(bytes));
                  cv_.notify_all();
                });
  }

  void drain() {
    std::unique_lock lock(mu_);
    for (;;) {
      processLocked(lock);
      if (inFlight_ == 0) return;
      cv_.wait(lock, [&] { return !done_.empty(); });
    }
  }

 private:
  struct Pending {
    ChunkKey key;
    std::uint64_t needed = 0;
    std::string path;
  };

  // Decodes what has arrived, without the lock (a chunk takes milliseconds).
  void processLocked(std::unique_lock<std::mutex>& lock) {
    while (!done_.empty()) {
      auto [p, bytes] = std::move(done_.front());
      done_.pop_front();
      --inFlight_;
      lock.unlock();
      check(p, bytes);
      lock.lock();
    }
  }

  void check(const Pending& p, const Result<Bytes>& bytes) {
    const std::string name = p.key.objectName();
    if (!bytes && bytes.error().isNotFound()) return;  // removed meanwhile: the walk saw it
    ++report_.chunksVerified;
    auto finding = [&](FindingKind kind, std::string detail) {
      report_.findings.push_back({kind, State::kReportOnly, name, p.path, std::move(detail)});
    };
    if (!bytes) {
      finding(FindingKind::kBadChunk, fmt::format("cannot be read: {}", bytes.error().toString()));
      return;
    }
    auto raw = cache::decodeChunk(*bytes);
    if (!raw) {
      finding(FindingKind::kBadChunk,
              fmt::format("damaged frame ({} bytes stored): {}; reads of these bytes fail",
                          bytes->size(), raw.error().toString()));
    } else if (raw->size() < p.needed) {
      finding(FindingKind::kShortChunk,
              fmt::format("holds {} raw bytes but the chunk map needs {}; reads of the rest fail",
                          raw->size(), p.needed));
    }
  }

  backends::ObjectStore& store_;
  const unsigned window_;
  FsckReport& report_;  // written only on the checking thread
  std::mutex mu_;       // guards the two below
  std::condition_variable cv_;
  std::deque<std::pair<Pending, Result<Bytes>>> done_;
  unsigned inFlight_ = 0;
};

class Checker {
 public:
  Checker(Volume& volume, const FsckOptions& options)
      : volume_(volume),
        store_(volume.store()),
        options_(options),
        now_(nowOr(options.nowSec)),
        map_(volume.record().chunkSize) {}

  Result<FsckReport> run() {
    TIERFS_RETURN_IF_ERROR(checkIntents());
    TIERFS_RETURN_IF_ERROR(listObjects());
    TIERFS_RETURN_IF_ERROR(checkVolumeObject());
    {
      std::optional<DeepVerifier> deep;
      if (options_.deep) {
        deep.emplace(volume_.store(), options_.deepReadsInFlight, report_);
        deep_ = &*deep;
      }
      TIERFS_RETURN_IF_ERROR(walkReachable());
      TIERFS_RETURN_IF_ERROR(walkUnreachable());
      if (deep) deep->drain();
      deep_ = nullptr;
    }
    TIERFS_RETURN_IF_ERROR(checkOrphanChunks());
    TIERFS_RETURN_IF_ERROR(checkIdAllocator());
    return std::move(report_);
  }

 private:
  struct Queued {
    Ino dir;
    std::string path;
  };

  bool recent(std::int64_t mtimeSec) const { return mtimeSec > now_ - options_.minAge.count(); }
  State repairedOr(const Status& s, std::string& detail) {
    if (s.isOk()) return State::kRepaired;
    detail += fmt::format("; repair failed: {}", s.toString());
    return State::kFound;
  }
  void add(FindingKind kind, State state, std::string object, std::string path,
           std::string detail) {
    report_.findings.push_back(
        {kind, state, std::move(object), std::move(path), std::move(detail)});
  }
  void noteId(std::uint64_t id) { maxId_ = std::max(maxId_, id); }

  // Rename intents first: with --repair, the walk then sees the finished renames.
  Status checkIntents() {
    std::vector<IntentOutcome> outcomes;
    Status s = recoverRenameIntents(volume_, options_.intentMinAge, &outcomes,
                                    {.apply = options_.repair, .nowSec = now_});
    if (!s.isOk() && outcomes.empty()) return s;  // the journal could not be read
    for (auto& o : outcomes) {
      if (auto id = parseHexId(o.key)) noteId(*id);
      const std::string object = fmt::format("{}[{}]", kJournalObject, o.key);
      using A = IntentOutcome::Action;
      switch (o.action) {
        case A::kRecent:
          add(FindingKind::kRenameIntent, State::kRecent, object, "",
              fmt::format("a rename in progress: {}; recent, left alone", o.detail));
          break;
        case A::kRolledForward:
        case A::kRolledBack:
          if (!o.applied && o.intent) {  // its inode may be in both directories until repaired
            if (auto moved = decodeInode(o.intent->moved)) pendingRenames_.insert(moved->ino);
          }
          add(FindingKind::kRenameIntent, o.applied ? State::kRepaired : State::kFound, object, "",
              fmt::format(
                  "interrupted rename, {}: {}",
                  o.applied
                      ? (o.action == A::kRolledForward ? "rolled forward" : "rolled back")
                      : (o.action == A::kRolledForward ? "would roll forward" : "would roll back"),
                  o.detail));
          break;
        case A::kConflict:
          add(FindingKind::kRenameIntent, State::kReportOnly, object, "", o.detail);
          break;
        case A::kUndecodable:
          add(FindingKind::kUndecodableIntent, State::kReportOnly, object, "",
              fmt::format("{}; left alone (the entries it names may need a look)", o.detail));
          break;
        case A::kFailed:
          add(FindingKind::kRenameIntent, State::kFound, object, "",
              fmt::format("interrupted rename, not recovered: {}", o.detail));
          break;
      }
    }
    return Status::ok();
  }

  Status listObjects() {
    std::string cursor;
    for (;;) {
      TIERFS_ASSIGN_OR_RETURN(backends::ObjectPage page,
                              store_.listObjects(cursor, options_.pageSize));
      for (const auto& name : page.names) {
        ++report_.objects;
        // Ids of chunks count once they are referenced or kept (checkOrphanChunks), of
        // directories once walked.
        if (auto key = ChunkKey::fromObjectName(name)) {
          chunks_.push_back(*key);
        } else if (auto dir = dirObjectIno(name)) {
          dirObjects_.push_back(*dir);
        } else if (name != kVolumeObject && name != kJournalObject) {
          add(FindingKind::kForeignObject, State::kNote, name, "",
              "not an object of the volume format; left alone");
        }
      }
      if (!page.more) break;
      cursor = page.nextCursor;
    }
    std::sort(chunks_.begin(), chunks_.end());
    chunks_.erase(std::unique(chunks_.begin(), chunks_.end()), chunks_.end());
    chunkUsed_.assign(chunks_.size(), false);
    std::sort(dirObjects_.begin(), dirObjects_.end());
    dirObjects_.erase(std::unique(dirObjects_.begin(), dirObjects_.end()), dirObjects_.end());
    report_.chunkObjects = chunks_.size();
    return Status::ok();
  }

  Status checkVolumeObject() {
    const std::string root(kRootKey), next(kNextIdKey);
    TIERFS_ASSIGN_OR_RETURN(auto values, store_.omapGet(std::string(kVolumeObject), {root, next}));
    nextIdText_ = values[next];
    auto id = std::uint64_t{0};
    auto [ptr, ec] =
        std::from_chars(nextIdText_.data(), nextIdText_.data() + nextIdText_.size(), id);
    if (nextIdText_.empty() || ec != std::errc() ||
        ptr != nextIdText_.data() + nextIdText_.size()) {
      add(FindingKind::kBadVolume, State::kReportOnly, std::string(kVolumeObject), "",
          fmt::format("the id allocator ({}) holds '{}', not a number", kNextIdKey, nextIdText_));
    } else {
      nextId_ = id;
      nextIdValid_ = true;
    }
    auto inode = decodeInode(values[root]);
    if (!inode) {
      add(FindingKind::kBadVolume, State::kReportOnly, std::string(kVolumeObject), "/",
          fmt::format("the root's inode ({}) does not decode: {}", kRootKey,
                      inode.error().toString()));
    } else if (inode->ino != kRootIno || !inode->isDir()) {
      add(FindingKind::kBadVolume, State::kReportOnly, std::string(kVolumeObject), "/",
          fmt::format("the root's inode is inode {:x}, not directory {:x}", inode->ino, kRootIno));
    }
    return Status::ok();
  }

  bool listed(Ino dir) const {
    return std::binary_search(dirObjects_.begin(), dirObjects_.end(), dir);
  }

  Result<bool> dirObjectExists(Ino dir) {
    if (listed(dir)) return true;
    auto st = store_.stat(dirObject(dir));  // created after the listing?
    if (!st && st.error().isNotFound()) return false;
    TIERFS_RETURN_IF_ERROR(statusOf(st));
    return true;
  }

  Status walkReachable() {
    TIERFS_ASSIGN_OR_RETURN(bool rootExists, dirObjectExists(kRootIno));
    if (!rootExists) {
      add(FindingKind::kMissingDirObject, State::kReportOnly, dirObject(kRootIno), "/",
          "the root directory object is missing: every directory object is unreachable");
      return Status::ok();
    }
    inoParent_.emplace(kRootIno, 0);
    return walk(kRootIno, "/", 0);
  }

  // Breadth first from `start`; `top` is 0 for the root's tree, else the unreachable directory
  // object the walk started at.
  Status walk(Ino start, std::string startPath, Ino top) {
    std::deque<Queued> queue;
    queue.push_back({start, std::move(startPath)});
    while (!queue.empty()) {
      Queued q = std::move(queue.front());
      queue.pop_front();
      dirPath_[q.dir] = q.path;
      if (top == 0) noteId(q.dir);  // unreachable ones count unless removed (checkUnreachable)
      if (top != 0) lostTop_[q.dir] = top;
      ++report_.directories;
      TIERFS_RETURN_IF_ERROR(walkDir(q, top, queue));
      if (top == 0) TIERFS_RETURN_IF_ERROR(checkRemovingMark(q));
    }
    return Status::ok();
  }

  Status walkDir(const Queued& q, Ino top, std::deque<Queued>& queue) {
    const std::string object = dirObject(q.dir);
    backends::OmapListArgs args{.maxEntries = options_.pageSize};
    for (;;) {
      auto page = store_.omapList(object, args);
      if (!page && page.error().isNotFound()) return Status::ok();  // removed since listed
      TIERFS_RETURN_IF_ERROR(statusOf(page));
      for (const auto& [name, value] : page->entries) {
        TIERFS_RETURN_IF_ERROR(visitEntry(q, name, value, top, queue));
      }
      if (!page->more || page->entries.empty()) return Status::ok();
      args.startAfter = page->entries.back().first;
    }
  }

  Status visitEntry(const Queued& q, const std::string& name, const std::string& value, Ino top,
                    std::deque<Queued>& queue) {
    const std::string object = dirObject(q.dir);
    const std::string path = joinPath(q.path, name);
    auto inode = decodeInode(value);
    if (!inode) {
      add(FindingKind::kUndecodableDentry, State::kReportOnly, object, path,
          fmt::format("entry '{}' does not decode: {}; left alone (a directory's subtree shows "
                      "up as unreachable)",
                      name, inode.error().toString()));
      return Status::ok();
    }
    noteId(inode->ino);
    for (const Extent& x : inode->extents) noteId(x.version);
    noteId(inode->version);
    auto [seen, fresh] = inoParent_.emplace(inode->ino, q.dir);
    if (!fresh) {
      auto lost = lostTop_.find(inode->ino);
      if (inode->isDir() && top != 0 && lost != lostTop_.end() && lost->second == inode->ino &&
          inode->ino != top) {
        lostTop_[inode->ino] = top;  // an unreachable top found inside another: not a top
        return Status::ok();
      }
      auto where = dirPath_.find(seen->second);
      std::string detail =
          fmt::format("inode {:x} also has an entry in {}", inode->ino,
                      where != dirPath_.end() ? where->second : dirObject(seen->second));
      if (pendingRenames_.contains(inode->ino)) {
        add(FindingKind::kDuplicateIno, State::kFound, object, path,
            detail + ": the interrupted rename reported above; repair finishes it");
      } else {
        add(FindingKind::kDuplicateIno, State::kReportOnly, object, path,
            detail + "; left alone (a person must decide which entry to keep)");
      }
      return Status::ok();
    }
    switch (inode->type) {
      case FileType::kDirectory:
        return visitSubdir(q, name, value, *inode, path, queue);
      case FileType::kRegular:
        ++report_.files;
        return checkChunks(q.dir, name, value, *inode, path);
      case FileType::kSymlink:
        ++report_.symlinks;
        return Status::ok();
    }
    return Status::ok();
  }

  Status visitSubdir(const Queued& q, const std::string& name, const std::string& value,
                     const Inode& inode, const std::string& path, std::deque<Queued>& queue) {
    TIERFS_ASSIGN_OR_RETURN(bool exists, dirObjectExists(inode.ino));
    if (exists) {
      queue.push_back({inode.ino, path});
      return Status::ok();
    }
    std::string detail = fmt::format(
        "directory entry '{}' (inode {:x}) has no directory object {}: its entries are lost", name,
        inode.ino, dirObject(inode.ino));
    State state = State::kFound;
    if (options_.repair) {
      detail += "; removed the entry";
      state = repairedOr(volume_.updateDir(dirObject(q.dir), {{name, value, ""}}), detail);
    } else {
      detail += "; repair removes the entry";
    }
    add(FindingKind::kMissingDirObject, state, dirObject(inode.ino), path, std::move(detail));
    return Status::ok();
  }

  Status checkChunks(Ino dir, const std::string& name, const std::string& value, const Inode& inode,
                     const std::string& path) {
    std::map<PieceId, std::uint64_t> needed;  // piece -> raw bytes the map reads from it
    for (const Extent& x : inode.extents) {
      for (const PieceRange& r : map_.resolve({x}, x.offset, x.length)) {
        std::uint64_t& n = needed[r.id];
        n = std::max(n, r.pieceOffset + r.length);
      }
    }
    std::vector<std::string> missing;
    for (const auto& [piece, bytes] : needed) {
      const ChunkKey key{inode.ino, piece.version, piece.piece};
      auto it = std::lower_bound(chunks_.begin(), chunks_.end(), key);
      if (it != chunks_.end() && *it == key) {
        auto i = static_cast<std::size_t>(it - chunks_.begin());
        if (chunkUsed_[i]) continue;
        chunkUsed_[i] = true;
        ++report_.chunksReferenced;
        if (deep_ != nullptr) deep_->submit(key, bytes, path);
        continue;
      }
      auto st = store_.stat(key.objectName());  // written after the listing?
      if (st) {
        ++report_.chunksReferenced;
        if (deep_ != nullptr) deep_->submit(key, bytes, path);
        continue;
      }
      if (!st.error().isNotFound()) return st.error();
      missing.push_back(key.objectName());
    }
    if (missing.empty()) return Status::ok();
    // A commit since the directory was listed may have replaced those chunks: look again.
    TIERFS_ASSIGN_OR_RETURN(auto now, readEntry(volume_, dir, name));
    if (!now || now->encoded != value) return Status::ok();
    std::string names;
    for (std::size_t i = 0; i < missing.size() && i < kNamesInDetail; ++i) {
      names += (i ? ", " : "") + missing[i];
    }
    if (missing.size() > kNamesInDetail) names += ", ...";
    add(FindingKind::kMissingChunk, State::kReportOnly, missing.front(), path,
        fmt::format("file (inode {:x}, {} bytes) refers to {} missing chunk object(s) ({}): "
                    "reads of those bytes fail; not repaired (data loss: restore the file "
                    "or remove it)",
                    inode.ino, inode.size, missing.size(), names));
    return Status::ok();
  }

  Status checkRemovingMark(const Queued& q) {
    TIERFS_ASSIGN_OR_RETURN(std::string mark, removingMark(store_, q.dir));
    if (mark.empty()) return Status::ok();
    auto st = store_.stat(dirObject(q.dir));
    if (!st && st.error().isNotFound()) return Status::ok();  // removed meanwhile
    TIERFS_RETURN_IF_ERROR(statusOf(st));
    std::string detail =
        fmt::format("directory is still marked as being removed ({}): no entry can be added to it",
                    kRemovingXattr);
    State state = State::kFound;
    if (recent(st->mtimeSec)) {
      detail += "; recent, left alone (an rmdir or rename may be in progress)";
      state = State::kRecent;
    } else if (options_.repair) {
      detail += "; cleared the mark";
      state = repairedOr(volume_.unsealDir(q.dir), detail);
    } else {
      detail += "; repair clears the mark";
    }
    add(FindingKind::kRemovingMark, state, dirObject(q.dir), q.path, std::move(detail));
    return Status::ok();
  }

  // Directory objects the root's walk did not reach. Each is walked too (so that the chunks its
  // files refer to count as referenced); the tops of those trees are then reported, and with
  // --repair removed when empty or reconnected under /lost+found when not.
  Status walkUnreachable() {
    std::vector<Ino> tops;
    for (Ino dir : dirObjects_) {
      if (dirPath_.contains(dir)) continue;
      tops.push_back(dir);
      inoParent_.emplace(dir, 0);
      TIERFS_RETURN_IF_ERROR(walk(dir, fmt::format("<unreachable {}>", dirObject(dir)), dir));
    }
    std::unordered_map<Ino, std::vector<Ino>> trees;  // top -> the directories of its tree
    for (const auto& [ino, top] : lostTop_) trees[top].push_back(ino);
    for (Ino dir : tops) {
      if (lostTop_[dir] != dir) continue;  // inside another unreachable tree
      TIERFS_RETURN_IF_ERROR(checkUnreachable(dir, trees[dir]));
    }
    return Status::ok();
  }

  Status checkUnreachable(Ino dir, const std::vector<Ino>& tree) {
    const std::string object = dirObject(dir);
    // The mtime xattr first: an entry added after this changes it, which the removal guards on.
    auto mtimeMark = store_.getXattr(object, std::string(kDirMtimeXattr));
    if (!mtimeMark && !mtimeMark.error().isNotFound()) return mtimeMark.error();
    const std::string mtimeValue = mtimeMark ? *mtimeMark : "";
    auto st = store_.stat(object);
    if (!st && st.error().isNotFound()) return Status::ok();  // removed meanwhile
    TIERFS_RETURN_IF_ERROR(statusOf(st));
    auto page = store_.omapList(object, {.maxEntries = 1});
    if (!page && page.error().isNotFound()) return Status::ok();
    TIERFS_RETURN_IF_ERROR(statusOf(page));
    TIERFS_ASSIGN_OR_RETURN(std::string mark, removingMark(store_, dir));
    const bool empty = page->entries.empty();
    const std::size_t below = tree.size() - 1;
    std::string detail =
        empty ? fmt::format("empty directory object that no entry refers to{}",
                            mark.empty() ? "" : " (marked as being removed: an unfinished rmdir)")
              : fmt::format(
                    "directory object with entries ({} directories below it) that no "
                    "entry refers to",
                    below);
    State state = State::kFound;
    if (recent(st->mtimeSec)) {
      detail += "; recent, left alone (a mkdir may be in progress)";
      state = State::kRecent;
    } else if (!options_.repair) {
      detail += empty ? "; repair removes it" : "; repair reconnects it under /lost+found";
    } else if (empty) {
      WriteOp op;
      op.xattrEquals(std::string(kDirMtimeXattr), mtimeValue);
      op.remove();
      auto r = store_.mutate(object, std::move(op));
      detail += "; removed it";
      state = repairedOr(statusOf(r), detail);
    } else {
      Status s = reconnect(dir, mark);
      detail += fmt::format("; reconnected as /{}/{}", kLostAndFound, object);
      state = repairedOr(s, detail);
    }
    if (!(empty && state == State::kRepaired)) {
      for (Ino ino : tree) noteId(ino);
    }
    add(FindingKind::kUnreachableDir, state, object, "", std::move(detail));
    return Status::ok();
  }

  Result<Ino> lostAndFound() {
    if (lostAndFound_ != 0) return lostAndFound_;
    const std::string name(kLostAndFound);
    TIERFS_ASSIGN_OR_RETURN(auto existing, volume_.readDentry(Location::of(kRootIno, name)));
    if (existing) {
      if (!existing->inode.isDir()) {
        return failure(Status::alreadyExists(fmt::format("/{} is not a directory", name)));
      }
      return lostAndFound_ = existing->inode.ino;
    }
    Inode dir;
    TIERFS_ASSIGN_OR_RETURN(dir.ino, volume_.newId());
    dir.type = FileType::kDirectory;
    dir.mode = 0700;
    dir.atime = dir.mtime = dir.ctime = Timestamp::now();
    TIERFS_RETURN_IF_ERROR(volume_.createDirObject(dir.ino));
    Status s = volume_.updateDir(dirObject(kRootIno), {{name, "", encodeInode(dir)}});
    if (!s.isOk()) {
      (void)volume_.dropDirObject(dir.ino);
      return failure(s);
    }
    return lostAndFound_ = dir.ino;
  }

  // Gives an unreachable directory object an entry again: /lost+found/d.<ino>, owned by root.
  Status reconnect(Ino dir, const std::string& removingMark) {
    TIERFS_ASSIGN_OR_RETURN(Ino parent, lostAndFound());
    if (!removingMark.empty()) TIERFS_RETURN_IF_ERROR(volume_.unsealDir(dir));
    Inode inode;
    inode.ino = dir;
    inode.type = FileType::kDirectory;
    inode.mode = 0700;
    inode.atime = inode.mtime = inode.ctime = Timestamp::now();
    return volume_.updateDir(dirObject(parent), {{dirObject(dir), "", encodeInode(inode)}});
  }

  // Chunk objects no chunk map refers to, reported per file and content version.
  Status checkOrphanChunks() {
    struct Group {
      std::uint64_t count = 0, bytes = 0;
      std::string first;
      Status error;
    };
    std::map<std::tuple<Ino, std::uint64_t, State>, Group> groups;
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
      if (chunkUsed_[i]) continue;
      const ChunkKey& key = chunks_[i];
      const std::string name = key.objectName();
      auto st = store_.stat(name);
      if (!st && st.error().isNotFound()) continue;  // removed since listed
      TIERFS_RETURN_IF_ERROR(statusOf(st));
      ++report_.orphanChunks;
      report_.orphanBytes += st->size;
      State state = State::kFound;
      Status error;
      if (recent(st->mtimeSec)) {
        state = State::kRecent;
      } else if (options_.repair) {
        // Not SyncStore::remove: GCC 12 warns (maybe-uninitialized, falsely) on its inlined
        // WriteOp in this file.
        auto r =
            backends::waitFor<std::uint64_t>([&](auto cb) { volume_.store().remove(name, cb); });
        state = r || r.error().isNotFound() ? State::kRepaired : State::kFound;
        if (state == State::kFound) error = r.error();
      }
      if (state != State::kRepaired) {
        noteId(key.ino);
        noteId(key.version);
      }
      Group& g = groups[{key.ino, key.version, state}];
      if (g.count++ == 0) g.first = name;
      g.bytes += st->size;
      if (g.error.isOk()) g.error = error;
    }
    for (const auto& [id, g] : groups) {
      const auto& [ino, version, state] = id;
      auto parent = inoParent_.find(ino);
      std::string whose =
          parent == inoParent_.end()
              ? fmt::format(
                    "no entry has inode {:x} (a removed file, or a create or upload "
                    "that never committed)",
                    ino)
              : fmt::format(
                    "inode {:x} (in {}) no longer refers to content version {:x} (left "
                    "over by a crash, or an upload not committed yet)",
                    ino,
                    dirPath_.contains(parent->second) ? dirPath_[parent->second]
                                                      : dirObject(parent->second),
                    version);
      std::string detail = fmt::format("{} chunk object(s), {} bytes, that no file refers to: {}",
                                       g.count, g.bytes, whose);
      switch (state) {
        case State::kRecent:
          detail += "; recent, left alone (a live daemon may be about to commit them)";
          break;
        case State::kRepaired:
          detail += "; removed";
          break;
        default:
          detail += g.error.isOk() ? "; repair removes them"
                                   : fmt::format("; removal failed: {}", g.error.toString());
      }
      std::string object = g.count == 1 ? g.first : fmt::format("c.{:x}.{:x}.*", ino, version);
      add(FindingKind::kOrphanChunk, state, std::move(object), "", std::move(detail));
    }
    return Status::ok();
  }

  // Every id in use must be below the allocator's next id, or a new file could take it.
  Status checkIdAllocator() {
    if (!nextIdValid_ || maxId_ < nextId_) return Status::ok();
    std::string detail =
        fmt::format("{} is {} but id {} is in use: new inodes or versions could collide",
                    kNextIdKey, nextId_, maxId_);
    State state = State::kFound;
    if (options_.repair) {
      detail += fmt::format("; raised it to {}", maxId_ + 1);
      state = repairedOr(raiseNextId(), detail);
    } else {
      detail += "; repair raises it";
    }
    add(FindingKind::kIdAllocatorBehind, state, std::string(kVolumeObject), "", std::move(detail));
    return Status::ok();
  }

  // Guarded on the value read just before: this run may have taken ids itself (lost+found).
  Status raiseNextId() {
    const std::string key(kNextIdKey);
    TIERFS_ASSIGN_OR_RETURN(auto values, store_.omapGet(std::string(kVolumeObject), {key}));
    std::uint64_t current = 0;
    const std::string& text = values[key];
    std::from_chars(text.data(), text.data() + text.size(), current);
    if (current > maxId_) return Status::ok();
    return statusOf(store_.mutate(
        std::string(kVolumeObject),
        std::move(WriteOp().omapEquals(key, text).omapSet(key, std::to_string(maxId_ + 1)))));
  }

  Volume& volume_;
  SyncStore store_;
  const FsckOptions options_;
  const std::int64_t now_;
  const ChunkMap map_;
  FsckReport report_;
  DeepVerifier* deep_ = nullptr;

  std::vector<ChunkKey> chunks_;                  // listed chunk objects, sorted
  std::vector<bool> chunkUsed_;                   // chunks_[i] is referenced by a chunk map
  std::vector<Ino> dirObjects_;                   // listed directory objects, sorted
  std::unordered_map<Ino, Ino> inoParent_;        // every inode walked -> its entry's directory
  std::unordered_map<Ino, std::string> dirPath_;  // every directory walked -> its path
  std::unordered_set<Ino> pendingRenames_;        // inodes of intents a repair would recover
  std::unordered_map<Ino, Ino> lostTop_;          // unreachable directory -> the top of its tree
  std::uint64_t maxId_ = 0;
  std::uint64_t nextId_ = 0;
  std::string nextIdText_;
  bool nextIdValid_ = false;
  Ino lostAndFound_ = 0;
};

}  // namespace

Result<FsckReport> checkVolume(Volume& volume, const FsckOptions& options) {
  return Checker(volume, options).run();
}

}  // namespace tierfs::fs
