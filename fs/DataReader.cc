#include "fs/DataReader.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include "backends/SyncStore.h"

namespace tierfs::fs {
namespace {

// Counts the piece reads of one call still out, and keeps the first error.
struct Gather {
  std::mutex mu;
  std::condition_variable done;
  std::size_t pending = 0;
  Status status;

  void finish(Status s) {
    std::lock_guard lock(mu);
    if (status.isOk() && !s.isOk()) status = std::move(s);
    if (--pending == 0) done.notify_all();
  }
  Status wait() {
    std::unique_lock lock(mu);
    done.wait(lock, [this] { return pending == 0; });
    return status;
  }
};

// Long enough for the kernel's retry of a failed read, short enough that a read after the back
// end came back is not refused for long.
constexpr Duration kFailedChunkMemory = std::chrono::seconds(1);
constexpr std::size_t kFailedChunksPruneAt = 4096;  // entries before expired ones are dropped

}  // namespace

std::optional<Status> DataReader::recentFailure(const cache::ChunkKey& key) const {
  std::lock_guard lock(failedMu_);
  auto it = failed_.find(key);
  if (it == failed_.end()) return std::nullopt;
  if (Clock::now() - it->second.first >= kFailedChunkMemory) {
    failed_.erase(it);
    return std::nullopt;
  }
  return it->second.second;
}

void DataReader::noteFailure(const cache::ChunkKey& key, const Status& status) const {
  if (!status.retryable()) return;
  const auto now = Clock::now();
  std::lock_guard lock(failedMu_);
  if (failed_.size() >= kFailedChunksPruneAt) {
    std::erase_if(failed_,
                  [&](const auto& e) { return now - e.second.first >= kFailedChunkMemory; });
  }
  failed_.insert_or_assign(key, std::make_pair(now, status));
}

Result<Bytes> DataReader::read(Ino ino, const std::vector<Extent>& extents, std::uint64_t size,
                               std::uint64_t offset, std::uint64_t length) const {
  if (offset >= size) return Bytes();
  length = std::min(length, size - offset);
  std::vector<PieceRange> pieces = map_.resolve(extents, offset, length);
  if (pieces.size() == 1 && pieces[0].length == length) return readPiece(ino, pieces[0]);
  std::string out(length, '\0');
  TIERFS_RETURN_IF_ERROR(gatherInto(ino, extents, offset, out, true));
  return Bytes(std::move(out));
}

Result<Bytes> DataReader::readPiece(Ino ino, const PieceRange& p) const {
  cache::ChunkKey key{ino, p.id.version, p.id.piece};
  if (auto failed = recentFailure(key)) return failure(*failed);
  auto chunk = fetch(key);
  if (!chunk) {
    noteFailure(key, chunk.error());
    return failure(chunk.error().withContext("reading " + key.objectName()));
  }
  TIERFS_RETURN_IF_ERROR(checkLength(key, *chunk, p));
  if (advisor_) noteAccess(ino, key, chunk->size());
  return chunk->slice(p.pieceOffset, p.length);
}

Result<Bytes> DataReader::fetch(const cache::ChunkKey& key) const {
  if (!backendDown_ || cache_.holds(key) || !backendDown_()) return cache_.readWaiting(key);
  return fetchBounded(key);
}

Result<Bytes> DataReader::fetchBounded(const cache::ChunkKey& key) const {
  struct Awaited {  // shared with the callback, which may come after this call has returned
    std::mutex mu;
    std::condition_variable answered;
    std::optional<Result<Bytes>> result;
  };
  auto awaited = std::make_shared<Awaited>();
  cache_.read(key, [awaited](Result<Bytes> chunk) {
    std::lock_guard lock(awaited->mu);
    awaited->result = std::move(chunk);
    awaited->answered.notify_all();
  });
  std::unique_lock lock(awaited->mu);
  if (awaited->answered.wait_for(lock, kDownFetchWait,
                                 [&] { return awaited->result.has_value(); })) {
    return std::move(*awaited->result);
  }
  return failure(Status::unavailable(
      fmt::format("the back end is not answering: no reply within {} ms while it is down",
                  std::chrono::duration_cast<std::chrono::milliseconds>(kDownFetchWait).count())));
}

// The size recorded is what the memory cache charges the chunk (its buffer), so that the
// advisor's LRU model is the memory cache itself.
void DataReader::noteAccess(Ino ino, const cache::ChunkKey& key, std::uint64_t rawBytes) const {
  const std::uint64_t bytes = cache_.memoryCharge(rawBytes);
  const std::uint64_t hash = cache::ChunkKeyHash{}(key);
  if (!advisor_->count(hash, bytes)) return;
  advisor_->recordDataset(hash, bytes, datasetOf_ ? datasetOf_(ino) : std::string());
}

Status DataReader::checkLength(const cache::ChunkKey& key, const Bytes& chunk,
                               const PieceRange& p) {
  if (chunk.size() >= p.pieceOffset + p.length) return Status::ok();
  return Status::corruption(fmt::format("chunk {} holds {} bytes; the file map needs {}",
                                        key.objectName(), chunk.size(), p.pieceOffset + p.length));
}

Status DataReader::readInto(Ino ino, const std::vector<Extent>& extents, std::uint64_t offset,
                            std::string& out) const {
  return gatherInto(ino, extents, offset, out, false);
}

Status DataReader::gatherInto(Ino ino, const std::vector<Extent>& extents, std::uint64_t offset,
                              std::string& out, bool demand) const {
  std::vector<PieceRange> pieces = map_.resolve(extents, offset, out.size());
  if (pieces.empty()) return Status::ok();
  // The cache answers every read exactly once (the store's deadline bounds it), so wait()
  // returns only after the last callback has written into `out`.
  auto gather = std::make_shared<Gather>();
  gather->pending = pieces.size();
  char* base = out.data();
  const bool note = demand && advisor_;
  for (const PieceRange& p : pieces) {
    cache::ChunkKey key{ino, p.id.version, p.id.piece};
    if (auto failed = recentFailure(key)) {
      gather->finish(*failed);
      continue;
    }
    cache_.read(key, [this, note, ino, gather, p, key, base, offset](Result<Bytes> chunk) {
      if (!chunk) {
        noteFailure(key, chunk.error());
        return gather->finish(chunk.error().withContext("reading " + key.objectName()));
      }
      if (Status s = checkLength(key, *chunk, p); !s.isOk()) return gather->finish(s);
      if (note) noteAccess(ino, key, chunk->size());
      std::copy_n(chunk->data() + p.pieceOffset, p.length, base + (p.fileOffset - offset));
      gather->finish(Status::ok());
    });
  }
  return gather->wait();
}

std::size_t DataReader::prefetch(Ino ino, const std::vector<Extent>& extents, std::uint64_t offset,
                                 std::uint64_t length, std::function<void()> done) const {
  std::vector<cache::ChunkKey> keys;
  for (const PieceRange& p : map_.resolve(extents, offset, length)) {
    cache::ChunkKey key{ino, p.id.version, p.id.piece};
    if (keys.empty() || !(keys.back() == key)) keys.push_back(key);
  }
  if (keys.empty()) {
    done();
    return 0;
  }
  auto pending = std::make_shared<std::atomic<std::size_t>>(keys.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (const cache::ChunkKey& key : keys) {
    cache_.read(
        key,
        [pending, finish](const Result<Bytes>&) {
          if (pending->fetch_sub(1) == 1) (*finish)();
        },
        cache::Priority::kReadAhead);
  }
  return keys.size();
}

}  // namespace tierfs::fs
