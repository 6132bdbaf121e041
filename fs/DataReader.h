#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/ChunkCache.h"
#include "cache/SizingAdvisor.h"
#include "fs/ChunkMap.h"

namespace tierfs::fs {

// Reads a file's bytes from its chunks through the chunk cache: every piece a read needs is
// requested at once, so one large read fetches its chunks in parallel. Thread-safe.
class DataReader {
 public:
  DataReader(cache::ChunkCache& cache, std::uint32_t chunkSize) : cache_(cache), map_(chunkSize) {}

  // The bytes [offset, offset + length) of a file of `size` bytes with chunk map `extents`,
  // cut at the end of the file; holes read as zeros. Blocks until every piece is in. Status
  // codes: the chunk cache's; Corruption when a chunk is shorter than the map says.
  // A range within one piece (the common case) shares the cached chunk's bytes: no copy.
  Result<Bytes> read(Ino ino, const std::vector<Extent>& extents, std::uint64_t size,
                     std::uint64_t offset, std::uint64_t length) const;
  // The same, answered through `done` exactly once: at once for what is cached, else from the
  // thread the last fetch completes on (a FUSE reply sent from there saves a reader thread's
  // wait and wake-up). `done` must not block.
  void read(Ino ino, const std::vector<Extent>& extents, std::uint64_t size, std::uint64_t offset,
            std::uint64_t length, cache::Callback<Bytes> done) const;

  // Fills the parts of `out` (the file bytes from `offset`) that `extents` cover; the rest of
  // `out` is left as it is.
  Status readInto(Ino ino, const std::vector<Extent>& extents, std::uint64_t offset,
                  std::string& out) const;

  // Starts reading the chunks that hold [offset, offset + length) into the cache and returns at
  // once, with the number of chunk reads started; `done` runs when all of them have answered
  // (at once when there are none). Errors are left to the demand reads that follow.
  std::size_t prefetch(Ino ino, const std::vector<Extent>& extents, std::uint64_t offset,
                       std::uint64_t length, std::function<void()> done) const;

  const ChunkMap& chunkMap() const { return map_; }

  // Has the chunk accesses of read() (demand reads; not prefetch() nor a writer's readInto())
  // recorded by `advisor`, with the top-level directory `datasetOf` names for the inode (asked
  // only for the accesses the advisor wants). Call before the first read.
  using DatasetFn = std::function<std::string(Ino)>;
  void recordAccesses(cache::SizingAdvisor* advisor, DatasetFn datasetOf) {
    advisor_ = advisor;
    datasetOf_ = std::move(datasetOf);
  }

  // While `backendDown` says the back end is not answering (the filesystem's stale hold), a
  // demand read of a chunk this node does not hold waits kDownFetchWait for it, not a whole
  // back-end timeout: the reader has already waited one for the call that found the back end
  // down. The fetch goes on in the background and is cached if it comes; an object the back end
  // still serves (a partial outage) answers long before. Call before the first read.
  static constexpr Duration kDownFetchWait = std::chrono::seconds(1);
  void boundFetchesWhile(std::function<bool()> backendDown) {
    backendDown_ = std::move(backendDown);
  }

 private:
  void gatherInto(Ino ino, const std::vector<Extent>& extents, std::uint64_t offset,
                  std::string& out, bool demand, std::function<void(Status)> done) const;
  void noteAccess(Ino ino, const cache::ChunkKey& key, std::uint64_t rawBytes) const;
  void readPiece(Ino ino, const PieceRange& piece, bool demand, bool here,
                 cache::Callback<Bytes> done) const;
  Result<Bytes> fetchBounded(const cache::ChunkKey& key) const;
  static Status checkLength(const cache::ChunkKey& key, const Bytes& chunk,
                            const PieceRange& piece);

  // Chunks whose fetch failed because the back end did not answer (TimedOut, Unavailable), and
  // when: another read of one within kFailedChunkMemory fails at once with the same error. The
  // kernel follows a failed read-ahead with a read of the single page, which would otherwise
  // wait out a second back-end timeout before the reader gets its EIO.
  std::optional<Status> recentFailure(const cache::ChunkKey& key) const;
  void noteFailure(const cache::ChunkKey& key, const Status& status) const;
  mutable std::mutex failedMu_;  // guards failed_
  mutable std::unordered_map<cache::ChunkKey, std::pair<Clock::time_point, Status>,
                             cache::ChunkKeyHash>
      failed_;

  cache::ChunkCache& cache_;
  ChunkMap map_;
  cache::SizingAdvisor* advisor_ = nullptr;  // not owned; null: accesses are not recorded
  DatasetFn datasetOf_;
  std::function<bool()> backendDown_;  // null: fetches are bounded by the store's deadline only
};

}  // namespace tierfs::fs
