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

// Counts the piece reads of one call still out, keeps the first error, and reports it when the
// last piece has answered.
struct Gather {
  std::mutex mu;
  std::size_t pending = 0;
  Status status;
  std::function<void(Status)> done;

  void finish(Status s) {
    {
      std::lock_guard lock(mu);
      if (status.isOk() && !s.isOk()) status = std::move(s);
      if (--pending != 0) return;
    }
    done(std::move(status));  // the last piece's answer: nobody else touches it now
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
  return backends::waitFor<Bytes>(
      [&](auto done) { read(ino, extents, size, offset, length, std::move(done)); });
}

void DataReader::read(Ino ino, const std::vector<Extent>& extents, std::uint64_t size,
                      std::uint64_t offset, std::uint64_t length,
                      cache::Callback<Bytes> done) const {
  if (offset >= size) return done(Bytes());
  length = std::min(length, size - offset);
  std::vector<PieceRange> pieces = map_.resolve(extents, offset, length);
  if (pieces.size() == 1 && pieces[0].length == length) {
    return readPiece(ino, pieces[0], true, true, std::move(done));
  }
  auto out = std::make_shared<std::string>(length, '\0');
  gatherInto(ino, extents, offset, *out, true, [out, done = std::move(done)](Status s) {
    if (!s.isOk()) return done(failure(std::move(s)));
    done(Bytes(std::move(*out)));
  });
}

// The piece's bytes of its chunk. `here`: a reader's single piece, whose cache work may run on
// the caller's thread (ChunkCache::readHere).
void DataReader::readPiece(Ino ino, const PieceRange& p, bool demand, bool here,
                           cache::Callback<Bytes> done) const {
  cache::ChunkKey key{ino, p.id.version, p.id.piece};
  if (auto failed = recentFailure(key)) return done(failure(*failed));
  auto answer = [this, ino, key, p, demand, done = std::move(done)](Result<Bytes> chunk) {
    if (!chunk) {
      noteFailure(key, chunk.error());
      return done(failure(chunk.error().withContext("reading " + key.objectName())));
    }
    if (Status s = checkLength(key, *chunk, p); !s.isOk()) return done(failure(std::move(s)));
    if (demand && advisor_) noteAccess(ino, key, chunk->size());
    done(chunk->slice(p.pieceOffset, p.length));
  };
  if (here && backendDown_ && !cache_.holds(key) && backendDown_()) {
    return answer(fetchBounded(key));
  }
  here ? cache_.readHere(key, std::move(answer)) : cache_.read(key, std::move(answer));
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
  return backends::waitForAnswer<Status>(
      [&](auto done) { gatherInto(ino, extents, offset, out, false, done); });
}

// Reads the pieces of `out` in parallel; `done` runs once the last has been copied in.
void DataReader::gatherInto(Ino ino, const std::vector<Extent>& extents, std::uint64_t offset,
                            std::string& out, bool demand, std::function<void(Status)> done) const {
  std::vector<PieceRange> pieces = map_.resolve(extents, offset, out.size());
  if (pieces.empty()) return done(Status::ok());
  auto gather = std::make_shared<Gather>();
  gather->pending = pieces.size();
  gather->done = std::move(done);
  char* base = out.data();
  for (const PieceRange& p : pieces) {
    readPiece(ino, p, demand, false, [gather, p, base, offset](Result<Bytes> piece) {
      if (!piece) return gather->finish(piece.error());
      std::copy_n(piece->data(), p.length, base + (p.fileOffset - offset));
      gather->finish(Status::ok());
    });
  }
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
