#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cache/ChunkCache.h"
#include "fs/TreeCache.h"

namespace tierfs::fs {

// Hinted prefetch (NoPFS's "clairvoyant" idea): a reader that knows the order it will read
// files in (an epoch's sample order) hands it over, and the chunks of the next `distance` files
// after the reader's position are read in exactly that order, at read-ahead priority, through
// this node's chunk cache. The position is the furthest file of the list the reader has opened, so
// the prefetch stays a bounded distance ahead however fast the reader goes: `distance` files, and
// no more than `maxBytesAhead` of data past the position (the reader's next file always goes), so
// that a hint over large files does not fetch more than the cache can keep until it is read.
//
// Thread-safe. accessed() is called from FUSE threads and only starts asynchronous fetches.
class HintedPrefetch {
 public:
  struct Stats {
    std::uint64_t files = 0;       // in the order
    std::uint64_t position = 0;    // files of the order the reader has reached
    std::uint64_t prefetched = 0;  // files whose chunks were asked for
    std::uint64_t bytes = 0;       // of their chunks, read ahead (or found cached)
    std::uint64_t failedChunks = 0;
  };

  HintedPrefetch(cache::ChunkCache& cache, std::vector<TreeCache::File> order, unsigned distance,
                 std::uint64_t maxBytesAhead = UINT64_MAX);
  ~HintedPrefetch();  // waits for the fetches it started

  // A file was opened: if it is in the order, the position moves past it.
  void accessed(Ino ino);
  Stats stats() const;
  bool finished() const;  // the reader reached the last file of the order

 private:
  std::vector<cache::ChunkKey> topUpLocked();
  void fetch(const std::vector<cache::ChunkKey>& keys);

  cache::ChunkCache& cache_;
  const std::vector<TreeCache::File> order_;
  const unsigned distance_;
  const std::uint64_t maxBytesAhead_;
  std::unordered_map<Ino, std::size_t> indexOf_;  // first place of each file in the order
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::size_t next_ = 0;     // the next file to prefetch
  std::size_t pending_ = 0;  // fetches not answered yet
  Stats stats_;
};

}  // namespace tierfs::fs
