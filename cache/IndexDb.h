#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/ChunkKey.h"
#include "common/Result.h"
#include "common/Status.h"

// The persistent half of the cache index: what each sealed region holds, in RocksDB, so that a
// restarted daemon (cleanly or after kill -9) finds its cache without scanning the devices. A
// region's record is written in one synced batch after the region's bytes are durable on the
// device, and deleted (synced) before the region is reused: the records never name bytes that
// were not written.
namespace tierfs::cache {

// One cached chunk inside a region.
struct EntryRecord {
  ChunkKey key;
  std::uint32_t offset = 0;    // of the entry (its header) from the region's start
  std::uint32_t length = 0;    // of the entry's payload
  std::uint64_t checksum = 0;  // XXH3-64 of the payload
  friend bool operator==(const EntryRecord&, const EntryRecord&) = default;
};

// A sealed region: where it is and what it holds.
struct RegionRecord {
  std::uint32_t region = 0;   // the region's number over all devices (see RegionCache)
  std::uint64_t sealSeq = 0;  // order of sealing (FIFO eviction)
  std::vector<EntryRecord> entries;
  friend bool operator==(const RegionRecord&, const RegionRecord&) = default;
};

// A page of a cached directory listing (see IndexDb::readListing).
struct ListingPage {
  std::vector<std::pair<std::string, std::string>> entries;  // name -> encoded dentry, by name
  bool more = false;
};

// What a cached listing is, without its entries.
struct ListingHeader {
  std::uint64_t dir = 0;
  std::uint64_t version = 0;  // of the directory's object when it was listed
  std::uint64_t bytes = 0;    // of its names and values
  std::uint64_t count = 0;
};

class IndexDb {
 public:
  // Opens (creating) the database in `dir`. `identity` names what the cached bytes belong to
  // and how they are laid out (the volume's id, the devices and their sizes, the region size):
  // a database made for another identity is emptied, and *wiped says so (the devices' old bytes
  // are then simply unreferenced).
  static Result<std::unique_ptr<IndexDb>> open(const std::string& dir, const std::string& identity,
                                               bool* wiped = nullptr);
  virtual ~IndexDb() = default;

  // Durable (synced) when it returns: every record, in one batch (one sync for several regions).
  virtual Status putRegions(std::span<const RegionRecord> records) = 0;
  Status putRegion(const RegionRecord& record) { return putRegions({&record, 1}); }
  virtual Status dropRegion(std::uint32_t region) = 0;
  // Replaces a region's record by one that lists fewer of its entries (erased ones), keeping
  // its access time. Not synced (see RegionCache::Impl::unrecordLocked).
  virtual Status rewriteRegion(const RegionRecord& record) = 0;
  // One region's record (what eviction must drop from the memory index); nullopt when none.
  virtual Result<std::optional<RegionRecord>> getRegion(std::uint32_t region) const = 0;

  // The last time (seconds since the epoch) each region was read from: kept for LRU across
  // restarts; written without a sync (losing the last few after a crash only ages them).
  virtual Status putAccessTimes(
      const std::vector<std::pair<std::uint32_t, std::int64_t>>& times) = 0;

  // Every region record, in region order, with its access time (0 when none was kept). A record
  // that does not decode is Corruption naming the region, and stops the walk.
  virtual Status forEachRegion(
      const std::function<Status(const RegionRecord&, std::int64_t accessTime)>& fn) const = 0;

  // Directory listings (cache/ListingCache.h): the entries of one directory as read at one
  // version of its object. Written without a sync: a listing lost in a crash is read again.
  // putListing replaces whatever was kept for `dir`, in one batch.
  virtual Status putListing(const ListingHeader& header,
                            const std::vector<std::pair<std::string, std::string>>& entries) = 0;
  virtual Status dropListing(std::uint64_t dir) = 0;
  // Up to `max` entries after `startAfter` ("" = from the first) of the listing of `dir`, read
  // in one snapshot; nullopt unless the listing kept is of `version`.
  virtual Result<std::optional<ListingPage>> readListing(std::uint64_t dir, std::uint64_t version,
                                                         const std::string& startAfter,
                                                         std::uint32_t max) const = 0;
  virtual Status forEachListing(const std::function<void(const ListingHeader&)>& fn) const = 0;

  // Bytes the database takes on disk (its files), for the capacity limit.
  virtual Result<std::uint64_t> diskBytes() const = 0;
};

// The record's encoding, for the database and for tests.
std::string encodeRegionRecord(const RegionRecord& record);
Result<RegionRecord> decodeRegionRecord(std::uint32_t region, std::string_view bytes);

}  // namespace tierfs::cache
