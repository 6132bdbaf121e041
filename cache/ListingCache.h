#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cache/IndexDb.h"
#include "common/Result.h"

// Directory listings kept in the cache's RocksDB index beside the region records, so that a
// listing (readdir, the lookups of a DataLoader) costs one stat of the directory's object
// instead of a page read per thousand entries, also after a restart. Each listing is the
// entries of one directory as read at one version of its object: the caller checks that
// version against the store before it takes a page, so a directory changed anywhere is read
// again. cache/ knows no dentries: names map to opaque values.
namespace tierfs::cache {

struct ListingCacheStats {
  std::uint64_t listings = 0;  // kept now
  std::uint64_t bytes = 0;     // their names and values
  std::uint64_t budgetBytes = 0;
  std::uint64_t hits = 0;      // listings served (their first page) from the cache
  std::uint64_t misses = 0;    // listings asked for that were absent or of another version
  std::uint64_t stored = 0;    // listings written
  std::uint64_t evicted = 0;   // dropped for room
  std::uint64_t tooLarge = 0;  // not kept: larger than a listing may be
  std::uint64_t errors = 0;    // index reads or writes that failed (a miss)
};

// Thread-safe.
class ListingCache {
 public:
  // Keeps listings in `db` up to `budgetBytes` of names and values (least recently used dropped
  // first; one listing may take an eighth of it). Finds the listings the database already holds.
  static Result<std::unique_ptr<ListingCache>> open(IndexDb& db, std::uint64_t budgetBytes);

  // True when the cache holds `dir`'s listing at `version` (counts a hit or a miss).
  bool holds(std::uint64_t dir, std::uint64_t version);
  // A page of that listing; nullopt when it is no longer held (replaced, evicted, unreadable).
  std::optional<ListingPage> read(std::uint64_t dir, std::uint64_t version,
                                  const std::string& startAfter, std::uint32_t max);
  // Keeps a whole listing, read at `version`, in place of any older one.
  void store(std::uint64_t dir, std::uint64_t version,
             const std::vector<std::pair<std::string, std::string>>& entries);
  // The directory changed here: its listing is not the truth any more.
  void drop(std::uint64_t dir);

  ListingCacheStats stats() const;

 private:
  ListingCache(IndexDb& db, std::uint64_t budgetBytes) : db_(db), budget_(budgetBytes) {}
  struct Kept {
    std::uint64_t version = 0;
    std::uint64_t bytes = 0;
    std::uint64_t lastUse = 0;
  };
  void touchLocked(std::uint64_t dir, Kept& kept);
  void forgetLocked(std::uint64_t dir);

  IndexDb& db_;
  const std::uint64_t budget_;
  mutable std::mutex mu_;  // guards everything below; held across index writes, not reads
  std::map<std::uint64_t, Kept> kept_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> byUse_;  // (lastUse, dir), oldest first
  std::uint64_t clock_ = 0;
  ListingCacheStats stats_;
};

}  // namespace tierfs::cache
