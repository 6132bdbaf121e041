#include "backends/DirStore.h"

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/snapshot.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <vector>

#include "backends/DirStoreKeys.h"
#include "common/FileUtil.h"
#include "common/RocksDbUnderTsan.h"

namespace tierfs::backends {
namespace {

using dirkeys::fromRocks;
using dirkeys::ObjectRecord;

std::uint64_t nowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr std::string_view kMarkerName = "DIRSTORE";
constexpr std::string_view kMarkerText = "tierfs-dirstore 1\n";
}  // namespace

Result<std::unique_ptr<DirStore>> DirStore::open(const DirStoreOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path marker = options.root / kMarkerName;
  if (!fs::exists(marker, ec)) {
    if (!options.create) {
      return failure(Status::notFound(fmt::format("'{}' is not a tierfs dir store (no {} file)",
                                                  options.root.string(), kMarkerName)));
    }
    if (fs::exists(options.root, ec) && !fs::is_empty(options.root, ec)) {
      return failure(Status::invalidArgument(fmt::format(
          "'{}' is not empty and is not a tierfs dir store (no {} file); refusing to use it",
          options.root.string(), kMarkerName)));
    }
    TIERFS_RETURN_IF_ERROR(createDirectories(options.root / "meta"));
    for (int i = 0; i < 256; ++i) {
      TIERFS_RETURN_IF_ERROR(createDirectories(options.root / "data" / fmt::format("{:02x}", i)));
    }
    TIERFS_RETURN_IF_ERROR(writeFileDurably(marker, kMarkerText));
  } else {
    TIERFS_ASSIGN_OR_RETURN(auto text, readSmallFile(marker));
    if (text != kMarkerText) {
      return failure(Status::notSupported(fmt::format("'{}' holds an unknown dir store format: {}",
                                                      marker.string(), text.substr(0, 40))));
    }
  }
  rocksdb::Options dbOptions;
  dbOptions.create_if_missing = true;
  dbOptions.max_open_files = 512;  // why: RLIMIT_NOFILE is 20000 here and the daemon needs fds
  writeGroupsTsanCanFollow(dbOptions);
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(dbOptions, (options.root / "meta").string(), &raw);
  if (!s.ok()) {
    if (s.ToString().find("lock") != std::string::npos) {
      return failure(
          Status::unavailable(fmt::format("dir store '{}' is in use by another process ({})",
                                          options.root.string(), s.ToString())));
    }
    return failure(fromRocks(s, "opening dir store metadata in " + options.root.string()));
  }
  return std::unique_ptr<DirStore>(new DirStore(options, std::unique_ptr<rocksdb::DB>(raw)));
}

DirStore::DirStore(const DirStoreOptions& options, std::unique_ptr<rocksdb::DB> db)
    : ObjectStore(options.timeout),
      options_(options),
      db_(std::move(db)),
      nextDataId_(nowMicros()),
      nextVersion_(nowMicros()),
      workers_(options.threads, "dirstore") {}

DirStore::~DirStore() = default;

std::string DirStore::describe() const {
  return fmt::format("dir store '{}'", options_.root.string());
}

template <typename T, typename Work>
void DirStore::submit(Callback<T> done, Deadline deadline, Work work) {
  workers_.post([done = std::move(done), deadline, work = std::move(work)]() mutable {
    // A call that waited past its deadline has been answered TimedOut: don't start it late.
    if (deadline.expired()) return;
    done(work());
  });
}

std::mutex& DirStore::stripeFor(const std::string& oid) {
  return stripes_[XXH3_64bits(oid.data(), oid.size()) % kStripes];
}

std::filesystem::path DirStore::dataPath(const std::string& oid, std::uint64_t dataId) const {
  XXH128_hash_t h = XXH3_128bits(oid.data(), oid.size());
  return options_.root / "data" / fmt::format("{:02x}", h.high64 >> 56) /
         fmt::format("{:016x}{:016x}.{:x}", h.high64, h.low64, dataId);
}

Result<dirkeys::ObjectRecord> DirStore::loadRecord(const std::string& oid,
                                                   const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions options;
  options.snapshot = snapshot;
  std::string value;
  auto s = db_->Get(options, dirkeys::recordKey(oid), &value);
  if (s.IsNotFound()) return failure(Status::notFound("no such object"));
  TIERFS_RETURN_IF_ERROR(fromRocks(s, "reading object record"));
  return ObjectRecord::decode(value);
}

Result<std::string> DirStore::readSync(const std::string& oid, std::uint64_t offset,
                                       std::uint64_t length) {
  UniqueFd fd;
  ObjectRecord rec;
  {
    // Open under the stripe lock: a writer unlinks the old data file only after its commit,
    // and an open descriptor keeps the file readable after that.
    std::lock_guard lock(stripeFor(oid));
    TIERFS_ASSIGN_OR_RETURN(rec, loadRecord(oid));
    if (rec.dataId != 0) {
      TIERFS_ASSIGN_OR_RETURN(fd, openForRead(dataPath(oid, rec.dataId)));
    }
  }
  if (offset >= rec.size) return std::string();
  std::uint64_t n = rec.size - offset;
  if (length != kToEnd && length < n) n = length;
  return preadExactly(fd.get(), offset, n);
}

void DirStore::readImpl(const std::string& oid, std::uint64_t offset, std::uint64_t length,
                        Callback<Bytes> done, Deadline deadline) {
  submit(std::move(done), deadline, [=, this] { return readSync(oid, offset, length); });
}

void DirStore::statImpl(const std::string& oid, Callback<ObjectStat> done, Deadline deadline) {
  submit(std::move(done), deadline, [=, this]() -> Result<ObjectStat> {
    TIERFS_ASSIGN_OR_RETURN(auto rec, loadRecord(oid));
    return ObjectStat{rec.size, rec.version, rec.mtimeSec};
  });
}

void DirStore::getXattrImpl(const std::string& oid, const std::string& name,
                            Callback<std::string> done, Deadline deadline) {
  submit(std::move(done), deadline, [=, this]() -> Result<std::string> {
    TIERFS_RETURN_IF_ERROR(statusOf(loadRecord(oid)));
    std::string value;
    auto s = db_->Get(rocksdb::ReadOptions(), dirkeys::xattrKey(oid, name), &value);
    if (s.IsNotFound()) return failure(Status::notFound("no such xattr"));
    TIERFS_RETURN_IF_ERROR(fromRocks(s, "reading xattr"));
    return value;
  });
}

Result<std::map<std::string, std::string>> DirStore::omapGetSync(
    const std::string& oid, const std::vector<std::string>& keys) {
  TIERFS_RETURN_IF_ERROR(statusOf(loadRecord(oid)));
  std::map<std::string, std::string> out;
  for (const auto& key : keys) {
    std::string value;
    auto s = db_->Get(rocksdb::ReadOptions(), dirkeys::omapKey(oid, key), &value);
    if (s.IsNotFound()) continue;
    TIERFS_RETURN_IF_ERROR(fromRocks(s, "reading omap"));
    out.emplace(key, std::move(value));
  }
  return out;
}

void DirStore::omapGetImpl(const std::string& oid, std::vector<std::string> keys,
                           Callback<std::map<std::string, std::string>> done, Deadline deadline) {
  submit(std::move(done), deadline,
         [=, this, keys = std::move(keys)] { return omapGetSync(oid, keys); });
}

Result<OmapPage> DirStore::omapListSync(const std::string& oid, const OmapListArgs& args) {
  // One snapshot for the record and the keys: the page is the omap as of the version it names.
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions options;
  options.snapshot = snapshot.snapshot();
  TIERFS_ASSIGN_OR_RETURN(auto rec, loadRecord(oid, options.snapshot));
  const std::string base = dirkeys::ownedPrefix('m', oid);
  const std::string wanted = base + args.prefix;
  const std::string after = base + args.startAfter;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options));
  it->Seek(std::max(wanted, after));
  if (it->Valid() && it->key() == rocksdb::Slice(after)) it->Next();
  OmapPage page;
  page.version = rec.version;
  for (; it->Valid() && it->key().starts_with(wanted); it->Next()) {
    if (page.entries.size() == args.maxEntries) {
      page.more = true;
      break;
    }
    page.entries.emplace_back(it->key().ToString().substr(base.size()), it->value().ToString());
  }
  TIERFS_RETURN_IF_ERROR(fromRocks(it->status(), "listing omap"));
  return page;
}

void DirStore::omapListImpl(const std::string& oid, OmapListArgs args, Callback<OmapPage> done,
                            Deadline deadline) {
  submit(std::move(done), deadline,
         [=, this, args = std::move(args)] { return omapListSync(oid, args); });
}

Result<ObjectPage> DirStore::listObjectsSync(const std::string& cursor, std::uint32_t maxEntries) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string after = dirkeys::recordKey(cursor);
  it->Seek(after);
  if (it->Valid() && !cursor.empty() && it->key() == rocksdb::Slice(after)) it->Next();
  ObjectPage page;
  for (; it->Valid() && it->key().starts_with("o"); it->Next()) {
    if (page.names.size() == maxEntries) {
      page.more = true;
      break;
    }
    page.names.push_back(it->key().ToString().substr(1));
  }
  TIERFS_RETURN_IF_ERROR(fromRocks(it->status(), "listing objects"));
  if (page.more) page.nextCursor = page.names.back();
  return page;
}

void DirStore::listObjectsImpl(const std::string& cursor, std::uint32_t maxEntries,
                               Callback<ObjectPage> done, Deadline deadline) {
  submit(std::move(done), deadline, [=, this] { return listObjectsSync(cursor, maxEntries); });
}

Result<std::uint64_t> DirStore::countObjects() {
  std::lock_guard countLock(countMu_);
  if (!objectsAtOpen_) {
    // Pin a snapshot and the delta that goes with it while no commit is between its write and
    // its count (both happen under the gate, shared), then count on the snapshot without locks.
    const rocksdb::Snapshot* snapshot = nullptr;
    std::int64_t deltaAtSnapshot = 0;
    {
      std::unique_lock gate(commitGate_);
      snapshot = db_->GetSnapshot();
      deltaAtSnapshot = objectsDelta_.load();
    }
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    std::int64_t records = 0;
    for (it->Seek("o"); it->Valid() && it->key().starts_with("o"); it->Next()) ++records;
    Status s = fromRocks(it->status(), "counting objects");
    it.reset();
    db_->ReleaseSnapshot(snapshot);
    TIERFS_RETURN_IF_ERROR(s);
    objectsAtOpen_ = records - deltaAtSnapshot;
  }
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, *objectsAtOpen_ + objectsDelta_));
}

Result<StoreUsage> DirStore::usageSync() {
  struct statvfs fs {};
  if (::statvfs(options_.root.c_str(), &fs) != 0) {
    return failure(Status::fromErrno(errno, "statvfs of " + options_.root.string()));
  }
  StoreUsage u;
  // As df shows it: used = total - free; avail is what is left to unprivileged writers.
  u.totalBytes = std::uint64_t{fs.f_blocks} * fs.f_frsize;
  u.usedBytes = std::uint64_t{fs.f_blocks - fs.f_bfree} * fs.f_frsize;
  u.availBytes = std::uint64_t{fs.f_bavail} * fs.f_frsize;
  TIERFS_ASSIGN_OR_RETURN(u.objects, countObjects());
  return u;
}

void DirStore::usageImpl(Callback<StoreUsage> done, Deadline deadline) {
  submit(std::move(done), deadline, [this] { return usageSync(); });
}

void DirStore::mutateImpl(const std::string& oid, WriteOp op, Callback<std::uint64_t> done,
                          Deadline deadline) {
  submit(std::move(done), deadline, [=, this, op = std::move(op)] { return mutateSync(oid, op); });
}

Result<std::uint64_t> DirStore::writeDataFile(const std::string& oid, std::string_view data) {
  std::uint64_t id = nextDataId_++;
  TIERFS_RETURN_IF_ERROR(writeNewFile(dataPath(oid, id), data, options_.durable));
  return id;
}

void DirStore::unlinkDataFile(const std::string& oid, std::uint64_t dataId) {
  if (dataId != 0) ::unlink(dataPath(oid, dataId).c_str());
}

}  // namespace tierfs::backends
