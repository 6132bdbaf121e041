#include "fs/HintedPrefetch.h"

namespace tierfs::fs {
namespace {

std::uint64_t dataBytes(const TreeCache::File& file) {
  std::uint64_t bytes = 0;
  for (const TreeCache::Chunk& chunk : file.chunks) bytes += chunk.bytes;
  return bytes;
}

}  // namespace

HintedPrefetch::HintedPrefetch(cache::ChunkCache& cache, std::vector<TreeCache::File> order,
                               unsigned distance, std::uint64_t maxBytesAhead)
    : cache_(cache),
      order_(std::move(order)),
      distance_(std::max(1u, distance)),
      maxBytesAhead_(maxBytesAhead) {
  for (std::size_t i = 0; i < order_.size(); ++i) indexOf_.try_emplace(order_[i].ino, i);
  std::vector<cache::ChunkKey> keys;
  {
    std::lock_guard lock(mu_);
    stats_.files = order_.size();
    keys = topUpLocked();
  }
  fetch(keys);
}

HintedPrefetch::~HintedPrefetch() {
  std::unique_lock lock(mu_);
  next_ = order_.size();  // start nothing more
  idle_.wait(lock, [this] { return pending_ == 0; });
}

void HintedPrefetch::accessed(Ino ino) {
  auto it = indexOf_.find(ino);
  if (it == indexOf_.end()) return;
  std::vector<cache::ChunkKey> keys;
  {
    std::lock_guard lock(mu_);
    stats_.position = std::max<std::uint64_t>(stats_.position, it->second + 1);
    keys = topUpLocked();
  }
  fetch(keys);
}

// The chunks of the files up to `distance` past the position not asked for yet, within
// maxBytesAhead_ of data past it, in the order given (counted as pending: fetch() must follow,
// outside the lock).
std::vector<cache::ChunkKey> HintedPrefetch::topUpLocked() {
  std::vector<cache::ChunkKey> keys;
  const std::size_t position = stats_.position;
  const std::size_t until = std::min<std::size_t>(order_.size(), position + distance_);
  std::uint64_t ahead = 0;
  for (std::size_t i = position; i < next_; ++i) ahead += dataBytes(order_[i]);
  for (; next_ < until; ++next_) {
    if (next_ >= position) {
      const std::uint64_t bytes = dataBytes(order_[next_]);
      if (next_ > position && ahead + bytes > maxBytesAhead_) break;
      ahead += bytes;
    }
    ++stats_.prefetched;
    for (const TreeCache::Chunk& chunk : order_[next_].chunks) keys.push_back(chunk.key);
  }
  pending_ += keys.size();
  return keys;
}

// Reads the chunks through the cache, in order, as read-ahead: the scheduler starts them in that
// order (FIFO within a priority), a reader that gets there first joins the read under way (and
// raises it to its own priority), and what is fetched is kept as any read is. A chunk already
// cached answers at once, on this thread.
void HintedPrefetch::fetch(const std::vector<cache::ChunkKey>& keys) {
  for (const cache::ChunkKey& key : keys) {
    cache_.read(
        key,
        [this](Result<Bytes> r) {
          std::lock_guard lock(mu_);
          if (r) {
            stats_.bytes += r->size();
          } else {
            ++stats_.failedChunks;
          }
          if (--pending_ == 0) idle_.notify_all();
        },
        cache::Priority::kReadAhead);
  }
}

HintedPrefetch::Stats HintedPrefetch::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

bool HintedPrefetch::finished() const {
  std::lock_guard lock(mu_);
  return stats_.position >= order_.size();
}

}  // namespace tierfs::fs
