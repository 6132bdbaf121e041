#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/Deadline.h"
#include "fs/Volume.h"

namespace tierfs::fs {

// Whole listings of directories that are being looked up in a burst (a DataLoader opening the
// files of a class directory in a shuffled order): one omap read of the directory then answers
// the lookups that follow for `ttl`, instead of one store round trip per file. It gives the same
// consistency as the kernel's entry cache with the same timeout. Only positive answers come from
// it; an absent name is always asked of the store (it may have just been created elsewhere).
// A listing past its ttl is not read again whole while the directory object is at the version it
// was listed at (every change of an entry changes it): one stat renews it.
//
// Thread-safe. Memory is bounded by `maxEntries` dentries over all listings (oldest dropped).
class DentryCache {
 public:
  DentryCache(Duration ttl, std::size_t maxEntries) : ttl_(ttl), maxEntries_(maxEntries) {}

  struct Hit {
    Dentry dentry;
    Clock::time_point fetchedAt;
  };
  std::optional<Hit> find(Ino dir, const std::string& name);

  // Notes a lookup the cache could not answer. True when the caller should list the directory
  // now: a second miss within ttl, and no other thread is listing it.
  bool shouldList(Ino dir);
  // Stores a complete listing made at `fetchedAt` of the directory object at `version` (0:
  // unknown, never renewed); ends a shouldList() claim. `entries` of nullopt (the directory was too
  // large, or the listing failed) just ends the claim.
  void store(Ino dir, std::optional<std::vector<std::pair<std::string, Dentry>>> entries,
             Clock::time_point fetchedAt, std::uint64_t version = 0);
  // The version of the directory's listing when it is past its ttl and could be renewed.
  std::optional<std::uint64_t> expiredVersion(Ino dir);
  // The directory object was still at `version` at `checkedAt`: its listing, if it is of that
  // version, answers again for a ttl from then.
  void renew(Ino dir, std::uint64_t version, Clock::time_point checkedAt);
  // The directory's entries changed here: its listing is no longer the truth.
  void invalidate(Ino dir);

 private:
  struct Listing {
    Clock::time_point fetchedAt;
    std::uint64_t version = 0;
    std::unordered_map<std::string, Dentry> entries;
  };
  void evictLocked();
  void quietLocked(Ino dir);

  const Duration ttl_;
  const std::size_t maxEntries_;
  std::mutex mu_;  // guards everything below; never held across a store call
  std::unordered_map<Ino, Listing> listings_;
  std::deque<Ino> order_;  // listings, oldest first (may name ones already dropped)
  std::size_t entries_ = 0;
  std::unordered_map<Ino, Clock::time_point> lastMiss_;
  std::unordered_set<Ino> listing_;                        // directories a thread is listing now
  std::unordered_map<Ino, Clock::time_point> quietUntil_;  // not to be listed before then
};

}  // namespace tierfs::fs
