#include "cache/IndexDb.h"

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/snapshot.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <limits>
#include <optional>

#include "common/Encoding.h"
#include "common/Endian.h"
#include "common/FileUtil.h"
#include "common/RocksDbUnderTsan.h"

namespace tierfs::cache {
namespace {

constexpr std::uint8_t kRecordVersion = 1;
// The fewest bytes an entry takes: five one-byte varints and the 8-byte checksum. A count that
// the remaining bytes cannot hold is rejected before anything is allocated for it.
constexpr std::size_t kMinEntryBytes = 5 + 8;

// Key layout:
//   "m/identity"          -> what the cached bytes belong to (see IndexDb::open)
//   "r/" + be32(region)   -> encodeRegionRecord(record)
//   "a/" + be32(region)   -> the region's last access time, a zigzag varint
//   "d/" + be64(dir)      -> a directory listing's header: varints version, bytes, count
//   "e/" + be64(dir) + name -> that listing's entry: the encoded dentry
// Big-endian region numbers make RocksDB's order the region order.
constexpr std::string_view kIdentityKey = "m/identity";
constexpr std::string_view kListingPrefix = "d/";
constexpr std::string_view kListingEntryPrefix = "e/";
constexpr std::string_view kListingEnd = "d0";
constexpr std::string_view kRecordPrefix = "r/";
constexpr std::string_view kAccessPrefix = "a/";
// The first key after every key of each prefix ('/' + 1 == '0').
constexpr std::string_view kRecordEnd = "r0";
constexpr std::string_view kAccessEnd = "a0";

std::string regionKey(std::string_view prefix, std::uint32_t region) {
  std::string key(prefix);
  appendBigEndian32(key, region);
  return key;
}

// The region of a "r/" or "a/" key; nullopt when the key is not prefix + 4 bytes.
std::optional<std::uint32_t> regionOfKey(const rocksdb::Slice& key) {
  if (key.size() != 6) return std::nullopt;
  std::uint32_t region = 0;
  for (std::size_t i = 2; i < 6; ++i) region = (region << 8) | static_cast<std::uint8_t>(key[i]);
  return region;
}

std::string dirKey(std::string_view prefix, std::uint64_t dir) {
  std::string key(prefix);
  appendBigEndian64(key, dir);
  return key;
}

// The first key after every entry of `dir`'s listing ("e/" + be64(dir + 1), or "e0" past the
// last directory number).
std::string listingEntriesEnd(std::uint64_t dir) {
  if (dir == std::numeric_limits<std::uint64_t>::max()) return "e0";
  return dirKey(kListingEntryPrefix, dir + 1);
}

std::string encodeListingHeader(const ListingHeader& h) {
  Encoder e;
  e.putVarint(h.version);
  e.putVarint(h.bytes);
  e.putVarint(h.count);
  return e.take();
}

Result<ListingHeader> decodeListingHeader(std::uint64_t dir, std::string_view bytes) {
  Decoder d(bytes, fmt::format("cached listing of directory {}", dir));
  ListingHeader h{.dir = dir};
  TIERFS_ASSIGN_OR_RETURN(h.version, d.varint("version"));
  TIERFS_ASSIGN_OR_RETURN(h.bytes, d.varint("bytes"));
  TIERFS_ASSIGN_OR_RETURN(h.count, d.varint("count"));
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  return h;
}

std::string hexOf(const rocksdb::Slice& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += fmt::format("{:02x}", static_cast<std::uint8_t>(s[i]));
  }
  return out;
}

std::string encodeAccessTime(std::int64_t t) {
  Encoder e;
  e.putSigned(t);
  return e.take();
}

Result<std::int64_t> decodeAccessTime(std::uint32_t region, std::string_view bytes) {
  const std::string what = fmt::format("cache region {} access time", region);
  Decoder d(bytes, what);
  TIERFS_ASSIGN_OR_RETURN(std::int64_t t, d.signedVarint("time"));
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  return t;
}

Status rocksStatus(const rocksdb::Status& s, const std::string& dir, std::string_view what) {
  if (s.ok()) return Status::ok();
  const std::string msg = fmt::format("cache index in {}: {}: {}", dir, what, s.ToString());
  if (s.IsCorruption()) return Status::corruption(msg);
  if (s.IsNoSpace()) return Status::noSpace(msg);
  return Status::ioError(msg);
}

class RocksIndexDb final : public IndexDb {
 public:
  RocksIndexDb(std::string dir, std::unique_ptr<rocksdb::DB> db)
      : dir_(std::move(dir)), db_(std::move(db)) {}

  ~RocksIndexDb() override {
    // Close() reports what the destructor would swallow; every record is synced already, so
    // nothing is lost if it fails.
    (void)db_->Close();
  }

  Status putRegions(std::span<const RegionRecord> records) override {
    rocksdb::WriteBatch batch;
    for (const RegionRecord& record : records) {
      TIERFS_RETURN_IF_ERROR(
          fromRocks(batch.Put(regionKey(kRecordPrefix, record.region), encodeRegionRecord(record)),
                    "batching a region record"));
      // A new record is a new region content: the old one's access time does not apply.
      TIERFS_RETURN_IF_ERROR(fromRocks(batch.Delete(regionKey(kAccessPrefix, record.region)),
                                       "batching a region record"));
    }
    return write(batch, /*sync=*/true,
                 records.size() == 1
                     ? fmt::format("writing the record of region {}", records[0].region)
                     : fmt::format("writing the records of {} regions", records.size()));
  }

  Status rewriteRegion(const RegionRecord& record) override {
    rocksdb::WriteBatch batch;
    TIERFS_RETURN_IF_ERROR(
        fromRocks(batch.Put(regionKey(kRecordPrefix, record.region), encodeRegionRecord(record)),
                  "batching a region record"));
    return write(batch, /*sync=*/false,
                 fmt::format("rewriting the record of region {}", record.region));
  }

  Status dropRegion(std::uint32_t region) override {
    rocksdb::WriteBatch batch;
    TIERFS_RETURN_IF_ERROR(
        fromRocks(batch.Delete(regionKey(kRecordPrefix, region)), "batching a region drop"));
    TIERFS_RETURN_IF_ERROR(
        fromRocks(batch.Delete(regionKey(kAccessPrefix, region)), "batching a region drop"));
    return write(batch, /*sync=*/true, fmt::format("dropping the record of region {}", region));
  }

  Result<std::optional<RegionRecord>> getRegion(std::uint32_t region) const override {
    std::string value;
    auto s = db_->Get(rocksdb::ReadOptions(), regionKey(kRecordPrefix, region), &value);
    if (s.IsNotFound()) return std::optional<RegionRecord>();
    TIERFS_RETURN_IF_ERROR(fromRocks(s, fmt::format("reading the record of region {}", region)));
    TIERFS_ASSIGN_OR_RETURN(RegionRecord record, decodeRegionRecord(region, value));
    return std::optional<RegionRecord>(std::move(record));
  }

  Status putAccessTimes(const std::vector<std::pair<std::uint32_t, std::int64_t>>& times) override {
    if (times.empty()) return Status::ok();
    rocksdb::WriteBatch batch;
    for (const auto& [region, time] : times) {
      TIERFS_RETURN_IF_ERROR(
          fromRocks(batch.Put(regionKey(kAccessPrefix, region), encodeAccessTime(time)),
                    "batching access times"));
    }
    return write(batch, /*sync=*/false, fmt::format("writing {} access times", times.size()));
  }

  Status forEachRegion(const std::function<Status(const RegionRecord&, std::int64_t accessTime)>&
                           fn) const override {
    // Both walks read one snapshot, so a record and its access time are from the same moment
    // even if `fn` (or another thread) writes meanwhile.
    rocksdb::ManagedSnapshot managed(db_.get());
    const rocksdb::Snapshot* snapshot = managed.snapshot();

    const rocksdb::Slice recordEnd(kRecordEnd.data(), kRecordEnd.size());
    const rocksdb::Slice accessEnd(kAccessEnd.data(), kAccessEnd.size());
    rocksdb::ReadOptions recordOptions;
    recordOptions.snapshot = snapshot;
    recordOptions.iterate_upper_bound = &recordEnd;
    rocksdb::ReadOptions accessOptions;
    accessOptions.snapshot = snapshot;
    accessOptions.iterate_upper_bound = &accessEnd;
    std::unique_ptr<rocksdb::Iterator> records(db_->NewIterator(recordOptions));
    std::unique_ptr<rocksdb::Iterator> access(db_->NewIterator(accessOptions));
    records->Seek(rocksdb::Slice(kRecordPrefix.data(), kRecordPrefix.size()));
    access->Seek(rocksdb::Slice(kAccessPrefix.data(), kAccessPrefix.size()));

    for (; records->Valid(); records->Next()) {
      const auto region = regionOfKey(records->key());
      if (!region) {
        return Status::corruption(
            fmt::format("cache index in {}: malformed region key {}", dir_, hexOf(records->key())));
      }
      TIERFS_ASSIGN_OR_RETURN(
          RegionRecord record,
          decodeRegionRecord(*region,
                             std::string_view(records->value().data(), records->value().size())));
      // Access times of regions without a record (dropped ones are deleted with their record;
      // a stray one is harmless) are skipped.
      std::int64_t accessTime = 0;
      for (; access->Valid(); access->Next()) {
        const auto accessRegion = regionOfKey(access->key());
        if (!accessRegion) {
          return Status::corruption(fmt::format("cache index in {}: malformed access time key {}",
                                                dir_, hexOf(access->key())));
        }
        if (*accessRegion < *region) continue;
        if (*accessRegion == *region) {
          TIERFS_ASSIGN_OR_RETURN(
              accessTime, decodeAccessTime(*region, std::string_view(access->value().data(),
                                                                     access->value().size())));
        }
        break;
      }
      TIERFS_RETURN_IF_ERROR(fromRocks(access->status(), "reading access times"));
      TIERFS_RETURN_IF_ERROR(fn(record, accessTime));
    }
    return fromRocks(records->status(), "reading region records");
  }

  Status putListing(const ListingHeader& header,
                    const std::vector<std::pair<std::string, std::string>>& entries) override {
    rocksdb::WriteBatch batch;
    const std::string what = fmt::format("batching the listing of directory {}", header.dir);
    TIERFS_RETURN_IF_ERROR(fromRocks(
        batch.DeleteRange(dirKey(kListingEntryPrefix, header.dir), listingEntriesEnd(header.dir)),
        what));
    TIERFS_RETURN_IF_ERROR(fromRocks(
        batch.Put(dirKey(kListingPrefix, header.dir), encodeListingHeader(header)), what));
    const std::string base = dirKey(kListingEntryPrefix, header.dir);
    for (const auto& [name, value] : entries) {
      TIERFS_RETURN_IF_ERROR(fromRocks(batch.Put(base + name, value), what));
    }
    return write(batch, /*sync=*/false,
                 fmt::format("writing the listing of directory {}", header.dir));
  }

  Status dropListing(std::uint64_t dir) override {
    rocksdb::WriteBatch batch;
    const std::string what = fmt::format("batching the drop of directory {}'s listing", dir);
    TIERFS_RETURN_IF_ERROR(fromRocks(batch.Delete(dirKey(kListingPrefix, dir)), what));
    TIERFS_RETURN_IF_ERROR(fromRocks(
        batch.DeleteRange(dirKey(kListingEntryPrefix, dir), listingEntriesEnd(dir)), what));
    return write(batch, /*sync=*/false, fmt::format("dropping the listing of directory {}", dir));
  }

  Result<std::optional<ListingPage>> readListing(std::uint64_t dir, std::uint64_t version,
                                                 const std::string& startAfter,
                                                 std::uint32_t max) const override {
    rocksdb::ManagedSnapshot managed(db_.get());
    rocksdb::ReadOptions options;
    options.snapshot = managed.snapshot();
    std::string value;
    auto s = db_->Get(options, dirKey(kListingPrefix, dir), &value);
    if (s.IsNotFound()) return std::optional<ListingPage>();
    TIERFS_RETURN_IF_ERROR(fromRocks(s, fmt::format("reading the listing of directory {}", dir)));
    TIERFS_ASSIGN_OR_RETURN(ListingHeader header, decodeListingHeader(dir, value));
    if (header.version != version) return std::optional<ListingPage>();

    const std::string base = dirKey(kListingEntryPrefix, dir);
    const std::string end = listingEntriesEnd(dir);
    const rocksdb::Slice upper(end);
    options.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options));
    const std::string after = base + startAfter;
    it->Seek(after);
    if (it->Valid() && !startAfter.empty() && it->key() == rocksdb::Slice(after)) it->Next();
    ListingPage page;
    for (; it->Valid(); it->Next()) {
      if (page.entries.size() == max) {
        page.more = true;
        break;
      }
      page.entries.emplace_back(it->key().ToString().substr(base.size()), it->value().ToString());
    }
    TIERFS_RETURN_IF_ERROR(
        fromRocks(it->status(), fmt::format("reading the listing of directory {}", dir)));
    return std::optional<ListingPage>(std::move(page));
  }

  Status forEachListing(const std::function<void(const ListingHeader&)>& fn) const override {
    const rocksdb::Slice end(kListingEnd.data(), kListingEnd.size());
    rocksdb::ReadOptions options;
    options.iterate_upper_bound = &end;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options));
    for (it->Seek(rocksdb::Slice(kListingPrefix.data(), kListingPrefix.size())); it->Valid();
         it->Next()) {
      if (it->key().size() != kListingPrefix.size() + 8) {
        return Status::corruption(
            fmt::format("cache index in {}: malformed listing key {}", dir_, hexOf(it->key())));
      }
      std::uint64_t dir = 0;
      for (std::size_t i = kListingPrefix.size(); i < it->key().size(); ++i) {
        dir = (dir << 8) | static_cast<std::uint8_t>(it->key()[i]);
      }
      TIERFS_ASSIGN_OR_RETURN(
          ListingHeader header,
          decodeListingHeader(dir, std::string_view(it->value().data(), it->value().size())));
      fn(header);
    }
    return fromRocks(it->status(), "reading listing headers");
  }

  Result<std::uint64_t> diskBytes() const override {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::uint64_t total = 0;
    fs::recursive_directory_iterator it(dir_, ec);
    if (ec) return failure(Status::fromErrno(ec.value(), "listing cache index " + dir_));
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) return failure(Status::fromErrno(ec.value(), "listing cache index " + dir_));
      std::error_code fileEc;
      if (!it->is_regular_file(fileEc)) continue;
      const std::uintmax_t size = it->file_size(fileEc);
      // RocksDB deletes obsolete files in the background: one that is gone takes no space.
      if (fileEc) continue;
      total += size;
    }
    if (ec) return failure(Status::fromErrno(ec.value(), "listing cache index " + dir_));
    return total;
  }

 private:
  Status fromRocks(const rocksdb::Status& s, std::string_view what) const {
    return rocksStatus(s, dir_, what);
  }

  Status write(rocksdb::WriteBatch& batch, bool sync, std::string_view what) {
    rocksdb::WriteOptions options;
    options.sync = sync;
    return fromRocks(db_->Write(options, &batch), what);
  }

  const std::string dir_;
  const std::unique_ptr<rocksdb::DB> db_;
};

// Options for a small database whose every byte counts against the cache's size: no file may
// grow without bound (logs, manifest, write-ahead log), and nothing is kept for diagnosis that
// the daemon does not need.
rocksdb::Options indexOptions() {
  rocksdb::Options options;
  options.create_if_missing = true;
  writeGroupsTsanCanFollow(options);
  options.compression = rocksdb::kNoCompression;  // entries are small varints and checksums
  options.write_buffer_size = 4 << 20;
  options.max_write_buffer_number = 2;
  options.max_total_wal_size = 16 << 20;
  options.recycle_log_file_num = 0;
  // The info LOG: at most two old files of 1 MiB beside the current one.
  options.keep_log_file_num = 2;
  options.max_log_file_size = 1 << 20;
  options.stats_dump_period_sec = 0;
  options.stats_persist_period_sec = 0;
  options.info_log_level = rocksdb::INFO_LEVEL;  // the header's default is DEBUG without NDEBUG
  // The MANIFEST gains an edit per flush and compaction; RocksDB starts a new one past this
  // size (the default is 1 GiB).
  options.max_manifest_file_size = 1 << 20;
  // RocksDB would fallocate the open log (1.1 x write_buffer_size), manifest (4 MiB) and table
  // files ahead of their size: blocks that take disk space but not file size, which diskBytes()
  // could not see. Without it, the files' sizes are what they occupy.
  options.allow_fallocate = false;
  options.max_open_files = 64;  // why: the daemon needs its descriptors; the database is small
  return options;
}

// The index names the cached files (inode numbers, chunk keys, listings): only the daemon's user
// may enter its directory, whatever the umask. One made open by hand (or by an older tierfs) is
// closed with a warning, as the cache device files are.
Status makePrivate(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return Status::fromErrno(errno, "cache index directory " + dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::invalidArgument(fmt::format("cache index {} is not a directory", dir));
  }
  if ((st.st_mode & 077) == 0) return Status::ok();
  if (::chmod(dir.c_str(), 0700) != 0) {
    return Status::fromErrno(errno, "cache index directory " + dir + ": chmod 0700");
  }
  spdlog::warn("cache index directory {} was mode {:04o}: changed to 0700", dir,
               st.st_mode & 07777);
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<IndexDb>> IndexDb::open(const std::string& dir, const std::string& identity,
                                               bool* wiped) {
  namespace fs = std::filesystem;
  if (wiped != nullptr) *wiped = false;
  const fs::path path(dir);
  if (path.has_parent_path()) TIERFS_RETURN_IF_ERROR(createDirectories(path.parent_path()));
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return failure(Status::fromErrno(errno, "creating cache index directory " + dir));
  }
  TIERFS_RETURN_IF_ERROR(makePrivate(dir));

  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(indexOptions(), dir, &raw);
  if (!s.ok()) {
    if (s.ToString().find("lock") != std::string::npos) {
      return failure(Status::unavailable(
          fmt::format("cache index in {} is in use by another process ({})", dir, s.ToString())));
    }
    return failure(rocksStatus(s, dir, "opening"));
  }
  std::unique_ptr<rocksdb::DB> db(raw);

  std::string stored;
  s = db->Get(rocksdb::ReadOptions(), rocksdb::Slice(kIdentityKey.data(), kIdentityKey.size()),
              &stored);
  const bool hasIdentity = s.ok();
  if (!hasIdentity && !s.IsNotFound()) return failure(rocksStatus(s, dir, "reading the identity"));
  if (hasIdentity && stored == identity) {
    return std::unique_ptr<IndexDb>(new RocksIndexDb(dir, std::move(db)));
  }

  // A new database, or one made for other bytes: empty it and name the new identity in one
  // synced batch, so that a crash leaves either the old records or none.
  rocksdb::WriteBatch batch;
  bool hadKeys = false;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      hadKeys = true;
      TIERFS_RETURN_IF_ERROR(rocksStatus(batch.Delete(it->key()), dir, "batching the wipe"));
    }
    TIERFS_RETURN_IF_ERROR(rocksStatus(it->status(), dir, "listing keys to wipe"));
  }
  TIERFS_RETURN_IF_ERROR(
      rocksStatus(batch.Put(rocksdb::Slice(kIdentityKey.data(), kIdentityKey.size()), identity),
                  dir, "batching the identity"));
  rocksdb::WriteOptions sync;
  sync.sync = true;
  TIERFS_RETURN_IF_ERROR(rocksStatus(db->Write(sync, &batch), dir, "writing the identity"));
  if (hadKeys) {
    // The deleted records still take their bytes until compacted away.
    rocksdb::CompactRangeOptions compact;
    compact.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    TIERFS_RETURN_IF_ERROR(
        rocksStatus(db->CompactRange(compact, nullptr, nullptr), dir, "compacting after the wipe"));
    // Keys without an identity cannot have been written by open(): treat them as another's.
    if (wiped != nullptr) *wiped = true;
  }
  return std::unique_ptr<IndexDb>(new RocksIndexDb(dir, std::move(db)));
}

std::string encodeRegionRecord(const RegionRecord& record) {
  Encoder e;
  e.putU8(kRecordVersion);
  e.putVarint(record.sealSeq);
  e.putVarint(record.entries.size());
  for (const EntryRecord& entry : record.entries) {
    e.putVarint(entry.key.ino);
    e.putVarint(entry.key.version);
    e.putVarint(entry.key.piece);
    e.putVarint(entry.offset);
    e.putVarint(entry.length);
    e.putFixed64(entry.checksum);
  }
  return e.take();
}

Result<RegionRecord> decodeRegionRecord(std::uint32_t region, std::string_view bytes) {
  const std::string what = fmt::format("cache region record {}", region);
  Decoder d(bytes, what);
  TIERFS_ASSIGN_OR_RETURN(std::uint8_t version, d.u8("version"));
  if (version != kRecordVersion) {
    return failure(d.error("version", fmt::format("unknown record version {}", version)));
  }
  RegionRecord record;
  record.region = region;
  TIERFS_ASSIGN_OR_RETURN(record.sealSeq, d.varint("sealSeq"));
  TIERFS_ASSIGN_OR_RETURN(std::uint64_t count, d.varint("entry count"));
  if (count > d.remaining() / kMinEntryBytes) {
    return failure(d.error("entry count",
                           fmt::format("{} entries cannot fit in {} bytes", count, d.remaining())));
  }
  record.entries.resize(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < record.entries.size(); ++i) {
    EntryRecord& entry = record.entries[i];
    TIERFS_ASSIGN_OR_RETURN(entry.key.ino, d.varint("entry ino"));
    TIERFS_ASSIGN_OR_RETURN(entry.key.version, d.varint("entry version"));
    TIERFS_ASSIGN_OR_RETURN(entry.key.piece, d.varint32("entry piece"));
    TIERFS_ASSIGN_OR_RETURN(entry.offset, d.varint32("entry offset"));
    TIERFS_ASSIGN_OR_RETURN(entry.length, d.varint32("entry length"));
    if (std::uint64_t{entry.offset} + entry.length > std::numeric_limits<std::uint32_t>::max()) {
      return failure(
          d.error("entry length", fmt::format("entry {} at offset {} of length {} ends past 2^32",
                                              i, entry.offset, entry.length)));
    }
    TIERFS_ASSIGN_OR_RETURN(entry.checksum, d.fixed64("entry checksum"));
  }
  TIERFS_RETURN_IF_ERROR(d.expectEnd());
  return record;
}

}  // namespace tierfs::cache
