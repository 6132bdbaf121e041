#include "cache/ListingCache.h"

#include <spdlog/spdlog.h>

namespace tierfs::cache {

Result<std::unique_ptr<ListingCache>> ListingCache::open(IndexDb& db, std::uint64_t budgetBytes) {
  std::unique_ptr<ListingCache> cache(new ListingCache(db, budgetBytes));
  std::vector<std::uint64_t> overBudget;
  TIERFS_RETURN_IF_ERROR(db.forEachListing([&](const ListingHeader& h) {
    if (cache->stats_.bytes + h.bytes > budgetBytes) {  // the budget shrank since they were kept
      overBudget.push_back(h.dir);
      return;
    }
    Kept& kept = cache->kept_[h.dir];
    kept.version = h.version;
    kept.bytes = h.bytes;
    cache->touchLocked(h.dir, kept);
    cache->stats_.bytes += h.bytes;
  }));
  for (std::uint64_t dir : overBudget) TIERFS_RETURN_IF_ERROR(db.dropListing(dir));
  cache->stats_.budgetBytes = budgetBytes;
  return cache;
}

void ListingCache::touchLocked(std::uint64_t dir, Kept& kept) {
  if (kept.lastUse != 0) byUse_.erase({kept.lastUse, dir});
  kept.lastUse = ++clock_;
  byUse_.insert({kept.lastUse, dir});
}

void ListingCache::forgetLocked(std::uint64_t dir) {
  auto it = kept_.find(dir);
  if (it == kept_.end()) return;
  byUse_.erase({it->second.lastUse, dir});
  stats_.bytes -= it->second.bytes;
  kept_.erase(it);
}

bool ListingCache::holds(std::uint64_t dir, std::uint64_t version) {
  std::lock_guard lock(mu_);
  auto it = kept_.find(dir);
  if (it == kept_.end() || it->second.version != version) {
    ++stats_.misses;
    return false;
  }
  ++stats_.hits;
  touchLocked(dir, it->second);
  return true;
}

std::optional<ListingPage> ListingCache::read(std::uint64_t dir, std::uint64_t version,
                                              const std::string& startAfter, std::uint32_t max) {
  auto page = db_.readListing(dir, version, startAfter, max);
  if (!page) {
    spdlog::warn("cache: {}", page.error().message());
    std::lock_guard lock(mu_);
    ++stats_.errors;
    return std::nullopt;
  }
  return std::move(*page);
}

void ListingCache::store(std::uint64_t dir, std::uint64_t version,
                         const std::vector<std::pair<std::string, std::string>>& entries) {
  std::uint64_t bytes = 0;
  for (const auto& [name, value] : entries) bytes += name.size() + value.size();
  std::lock_guard lock(mu_);
  forgetLocked(dir);  // the listing kept (if any) is older than this one
  if (bytes > budget_ / 8) {
    ++stats_.tooLarge;
    if (auto s = db_.dropListing(dir); !s.ok()) ++stats_.errors;
    return;
  }
  while (stats_.bytes + bytes > budget_ && !byUse_.empty()) {
    const std::uint64_t victim = byUse_.begin()->second;
    forgetLocked(victim);
    ++stats_.evicted;
    if (auto s = db_.dropListing(victim); !s.ok()) {
      spdlog::warn("cache: {}", s.message());
      ++stats_.errors;
    }
  }
  if (auto s = db_.putListing({dir, version, bytes, entries.size()}, entries); !s.ok()) {
    spdlog::warn("cache: {}", s.message());
    ++stats_.errors;
    (void)db_.dropListing(dir);  // so that no listing is kept that the budget does not count
    return;
  }
  Kept& kept = kept_[dir];
  kept.version = version;
  kept.bytes = bytes;
  touchLocked(dir, kept);
  stats_.bytes += bytes;
  ++stats_.stored;
}

void ListingCache::drop(std::uint64_t dir) {
  std::lock_guard lock(mu_);
  if (!kept_.contains(dir)) return;
  forgetLocked(dir);
  if (auto s = db_.dropListing(dir); !s.ok()) ++stats_.errors;
}

ListingCacheStats ListingCache::stats() const {
  std::lock_guard lock(mu_);
  ListingCacheStats s = stats_;
  s.listings = kept_.size();
  return s;
}

}  // namespace tierfs::cache
