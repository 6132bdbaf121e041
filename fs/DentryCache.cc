#include "fs/DentryCache.h"

#include <algorithm>

namespace tierfs::fs {
namespace {

constexpr std::size_t kMaxMissNotes = 65536;

}  // namespace

std::optional<DentryCache::Hit> DentryCache::find(Ino dir, const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = listings_.find(dir);
  if (it == listings_.end()) return std::nullopt;
  if (Clock::now() - it->second.fetchedAt >= ttl_) {
    if (it->second.version == 0) {  // cannot be renewed
      entries_ -= it->second.entries.size();
      listings_.erase(it);
    }
    return std::nullopt;
  }
  auto e = it->second.entries.find(name);
  if (e == it->second.entries.end()) return std::nullopt;
  return Hit{e->second, it->second.fetchedAt};
}

std::optional<std::uint64_t> DentryCache::expiredVersion(Ino dir) {
  std::lock_guard lock(mu_);
  auto it = listings_.find(dir);
  if (it == listings_.end() || it->second.version == 0) return std::nullopt;
  if (Clock::now() - it->second.fetchedAt < ttl_) return std::nullopt;
  return it->second.version;
}

void DentryCache::renew(Ino dir, std::uint64_t version, Clock::time_point checkedAt) {
  std::lock_guard lock(mu_);
  auto it = listings_.find(dir);
  if (it == listings_.end()) return;
  if (it->second.version != version) {  // the directory changed: list it again
    entries_ -= it->second.entries.size();
    listings_.erase(it);
    return;
  }
  it->second.fetchedAt = std::max(it->second.fetchedAt, checkedAt);
}

bool DentryCache::shouldList(Ino dir) {
  if (ttl_ <= Duration::zero() || maxEntries_ == 0) return false;
  std::lock_guard lock(mu_);
  const Clock::time_point now = Clock::now();
  auto [it, first] = lastMiss_.try_emplace(dir, now);
  const bool burst = !first && now - it->second < ttl_;
  it->second = now;
  if (lastMiss_.size() > kMaxMissNotes) lastMiss_.clear();  // forget old notes: bounded memory
  auto quiet = quietUntil_.find(dir);
  if (quiet != quietUntil_.end() && now < quiet->second) return false;
  if (!burst || listing_.count(dir)) return false;
  listing_.insert(dir);
  return true;
}

void DentryCache::store(Ino dir, std::optional<std::vector<std::pair<std::string, Dentry>>> entries,
                        Clock::time_point fetchedAt, std::uint64_t version) {
  std::lock_guard lock(mu_);
  const bool claimed = listing_.erase(dir) > 0;
  if (!entries) quietLocked(dir);    // too large, or failed: do not try again at once
  if (!entries || !claimed) return;  // invalidated while listing: the listing may be stale
  Listing& l = listings_[dir];
  entries_ -= l.entries.size();
  l.entries.clear();
  for (auto& [name, d] : *entries) l.entries.emplace(std::move(name), std::move(d));
  l.fetchedAt = fetchedAt;
  l.version = version;
  entries_ += l.entries.size();
  order_.push_back(dir);
  evictLocked();
}

void DentryCache::invalidate(Ino dir) {
  std::lock_guard lock(mu_);
  listing_.erase(dir);
  // A directory being changed here (files created one by one) would be listed again after every
  // change: list it only once it has been quiet for a ttl.
  quietLocked(dir);
  auto it = listings_.find(dir);
  if (it == listings_.end()) return;
  entries_ -= it->second.entries.size();
  listings_.erase(it);
}

void DentryCache::quietLocked(Ino dir) {
  if (quietUntil_.size() > kMaxMissNotes) quietUntil_.clear();  // bounded memory
  quietUntil_[dir] = Clock::now() + ttl_;
}

void DentryCache::evictLocked() {
  while (entries_ > maxEntries_ && !order_.empty()) {
    auto it = listings_.find(order_.front());
    order_.pop_front();
    if (it == listings_.end()) continue;
    entries_ -= it->second.entries.size();
    listings_.erase(it);
  }
  if (order_.size() > 2 * listings_.size() + 64) {  // drop names of listings already gone
    std::deque<Ino> live;
    for (Ino d : order_) {
      if (listings_.count(d)) live.push_back(d);
    }
    order_ = std::move(live);
  }
}

}  // namespace tierfs::fs
