#include <absl/container/flat_hash_set.h>
#include <fmt/format.h>

#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cache/ChunkCache.h"
#include "cache/DeviceTier.h"
#include "common/ThreadPool.h"

namespace tierfs::cache {
namespace {

class MemoryChunkCache final : public ChunkCache {
 public:
  MemoryChunkCache(backends::ObjectStore& store, MemoryChunkCacheOptions options)
      : store_(store),
        options_(options),
        buffers_(options.buffers ? options.buffers : makeChunkBufferPool(options.chunkBytes)),
        codecPool_(options.codecThreads, "chunk-codec"),
        devicePool_(options.device ? options.deviceThreads : 0, "cache-device"),
        scheduler_(store, options.fetch) {}

  void read(const ChunkKey& key, Callback<Bytes> done, Priority priority) override {
    start(key, std::move(done), false, priority);
  }

  // A device hit is read and decoded on the caller's thread: one hand-off fewer per read.
  void readHere(const ChunkKey& key, Callback<Bytes> done) override {
    start(key, std::move(done), true, Priority::kDemand);
  }

  void write(const ChunkKey& key, Bytes raw, Callback<std::uint64_t> done) override {
    codecPool_.post([this, key, raw = std::move(raw), done = std::move(done)]() mutable {
      auto frame = encodeChunk(raw, *buffers_, options_.codec);
      if (!frame) return done(failure(frame.error()));
      Bytes stored = std::move(*frame);
      store_.createExclusive(key.objectName(), stored,
                             [this, key, raw, stored, done](Result<std::uint64_t> r) {
                               if (!r) return done(failure(r.error()));
                               insert(key, raw);
                               // Write-through: a checkpoint just written reads back locally.
                               if (options_.device)
                                 options_.device->insert(key, stored, raw, Origin::kWritten);
                               done(stored.size());
                             });
    });
  }

  void remove(const ChunkKey& key, Callback<std::uint64_t> done) override {
    {
      std::lock_guard lock(mu_);
      eraseLocked(key);
    }
    if (options_.device) options_.device->erase(key);
    store_.remove(key.objectName(), std::move(done));
  }

  void storedSize(const ChunkKey& key, Callback<std::uint64_t> done) override {
    store_.stat(key.objectName(), [done = std::move(done)](Result<backends::ObjectStat> st) {
      done(st ? Result<std::uint64_t>(st->size) : failure(st.error()));
    });
  }

  bool holds(const ChunkKey& key) const override {
    if (options_.device) return options_.device->contains(key);
    std::lock_guard lock(mu_);
    return entries_.count(key) > 0;
  }

  // A warm-up joins a fetch under way (a reader's or another warm-up's) and marks it as one to
  // keep; a reader that asks while a warm-up's fetch is under way joins it (and raises it).
  void warm(const ChunkKey& key, Callback<std::uint64_t> done, Priority priority) override {
    if (holds(key)) return done(std::uint64_t{0});
    {
      std::lock_guard lock(mu_);
      auto [it, first] = inFlight_.try_emplace(key);
      it->second.warmers.push_back(std::move(done));
      if (!first) return;
      it->second.startedByWarmUp = true;
    }
    fetch(key, priority);
  }

  std::uint64_t memoryCharge(std::uint64_t rawBytes) const override {
    return buffers_->footprint(rawBytes);
  }

  std::uint64_t roomBytes() const override {
    if (!options_.device) return 0;
    const RegionCacheStats s = options_.device->stats();
    return s.capacityBytes - std::min(s.usedBytes, s.capacityBytes);
  }

  void evict(const ChunkKey& key) override {
    {
      std::lock_guard lock(mu_);
      eraseLocked(key);
    }
    if (options_.device) options_.device->erase(key);
  }

  // A memory hit answers at once; a miss joins the fetch under way or starts one: from the
  // devices (on the caller's thread, or a device thread), else from the back end.
  void start(const ChunkKey& key, Callback<Bytes> done, bool onCallersThread, Priority priority) {
    std::optional<Bytes> hit;
    bool joined = false;
    {
      std::lock_guard lock(mu_);
      hit = lookupLocked(key);
      if (hit) {
        if (priority == Priority::kDemand) notePrefetchUsedLocked(key);
        ++counters_.memoryHits;
        counters_.bytesFromMemory += hit->size();
      }
      if (!hit) {
        auto [it, first] = inFlight_.try_emplace(key);
        it->second.readers.push_back(std::move(done));
        joined = !first;
        // A reader caught up with a fetch under way: if it is a prefetch, it paid off.
        if (joined && priority == Priority::kDemand) readerJoined_.insert(ChunkKeyHash{}(key));
      }
    }
    if (joined) {
      // The fetch under way answers this caller too; if it is still queued behind more urgent
      // work (read-ahead that a reader has caught up with), it moves up.
      scheduler_.raise(key.objectName(), priority);
      return;
    }
    if (hit) return done(std::move(*hit));
    if (!options_.device) return fetch(key, priority);
    if (onCallersThread) return readFromDevice(key, priority);
    devicePool_.post([this, key, priority] { readFromDevice(key, priority); });
  }

  ChunkCacheStats stats() const override {
    ChunkCacheStats s;
    {
      std::lock_guard lock(mu_);
      s = counters_;
    }
    if (DeviceTier* d = options_.device) {
      RegionCacheStats r = d->stats();
      s.deviceEntries = r.entries;
      s.deviceUsedBytes = r.usedBytes;
      s.deviceCapacityBytes = r.capacityBytes;
      s.deviceEvictedRegions = r.evictedRegions;
      s.deviceCorruptions = r.corruptions;
      s.deviceNotAdmitted = r.notAdmitted + d->refused();
      s.deviceFailed = r.failedDevices;
      s.deviceOccupiedBytes = d->occupiedBytes();
      s.deviceFramedBytes = d->framedBytes();
      s.deviceRawBytes = d->rawBytes();
    }
    return s;
  }

 private:
  struct Entry {
    Bytes raw;
    std::list<ChunkKey>::iterator lruPos;
    std::uint64_t charged;  // the memory its buffer occupies (BufferPool::footprint)
  };

  // A frame the store fetched: its raw bytes go into our buffers (the store's buffer is let go).
  Result<Bytes> decodeFetched(const Bytes& frame) const {
    return decodeChunkOwned(frame, *buffers_);
  }

  // On a device-pool thread: a hit is decoded there; a miss, or a frame that passed the entry's
  // checksum yet does not decode, goes to the back end.
  void readFromDevice(const ChunkKey& key, Priority priority) {
    if (std::optional<Bytes> frame = options_.device->lookup(key)) {
      // The device checked the entry (XXH3-64 of the whole frame).
      if (Result<Bytes> raw = decodeCheckedChunk(*frame, buffers_.get())) {
        count(&ChunkCacheStats::deviceHits, &ChunkCacheStats::bytesFromDevice, frame->size());
        if (priority == Priority::kDemand) {
          std::lock_guard lock(mu_);
          notePrefetchUsedLocked(key);
        }
        return finishRead(key, std::move(raw));
      }
      options_.device->erase(key);
    }
    fetch(key, priority);
  }

  void fetch(const ChunkKey& key, Priority priority) {
    if (priority == Priority::kDemand) {
      // A reader found it in no cache: if it had been fetched ahead, it was let go (evicted)
      // before it was read, and this read fetches it again. It did not pay off.
      std::lock_guard lock(mu_);
      forgetPrefetchLocked(key);
    }
    scheduler_.read(key.objectName(), priority, options_.chunkBytes,
                    [this, key, priority](Result<Bytes> frame) {
                      const bool here = !frame || decodesInline(*frame);
                      auto task = [this, key, priority, frame = std::move(frame)]() mutable {
                        if (!frame) return finishRead(key, failure(frame.error()));
                        count(&ChunkCacheStats::backendReads, &ChunkCacheStats::bytesFromBackend,
                              frame->size());
                        Result<Bytes> raw = decodeFetched(*frame);  // never keep a damaged one
                        if (raw && options_.device) {
                          options_.device->insert(
                              key, *frame, *raw,
                              warmUpWants(key) ? Origin::kWarmed : Origin::kFetched);
                        }
                        // Fetched ahead of readers (read-ahead, hints, sweeps; not warm-ups).
                        if (raw && priority != Priority::kDemand && priority != Priority::kWarm)
                          notePrefetched(key);
                        finishRead(key, std::move(raw), &*frame);
                      };
                      if (here) return task();
                      codecPool_.post(std::move(task));
                    });
  }

  // A small chunk is checked and copied on the thread that delivered it (a store completion
  // thread): cheaper than a hand-off to a codec thread, and its reader is answered one wake-up
  // sooner. Larger ones go to the codec threads, so that decoding one does not hold up the
  // completions behind it.
  static bool decodesInline(const Bytes& frame) {
    constexpr std::uint32_t kMaxInlineRawBytes = 256 << 10;
    auto header = parseFrameHeader(frame.view());
    return header && header->rawLength <= kMaxInlineRawBytes;
  }

  bool warmUpWants(const ChunkKey& key) const {
    std::lock_guard lock(mu_);
    auto it = inFlight_.find(key);
    return it != inFlight_.end() && !it->second.warmers.empty();
  }

  // Remembers a chunk fetched ahead of any reader, in two generations of keys (the older is
  // dropped when the newer is full): a bounded ~16 bytes a key.
  void notePrefetched(const ChunkKey& key) {
    constexpr std::size_t kGeneration = 256 * 1024;
    std::lock_guard lock(mu_);
    ++counters_.prefetchedChunks;
    if (readerJoined_.erase(ChunkKeyHash{}(key))) {
      ++counters_.prefetchUsed;
      return;
    }
    if (prefetched_.size() >= kGeneration) {
      prefetchedBefore_ = std::move(prefetched_);
      prefetched_.clear();
    }
    prefetched_.insert(ChunkKeyHash{}(key));
  }

  void notePrefetchUsedLocked(const ChunkKey& key) {
    if (forgetPrefetchLocked(key)) ++counters_.prefetchUsed;
  }

  // Drops the key from the chunks remembered as fetched ahead; true if it was one.
  bool forgetPrefetchLocked(const ChunkKey& key) {
    const std::uint64_t h = ChunkKeyHash{}(key);
    const bool recent = prefetched_.erase(h) > 0;  // from both generations: it may be in each
    const bool older = prefetchedBefore_.erase(h) > 0;
    return recent || older;
  }

  void count(std::uint64_t ChunkCacheStats::*reads, std::uint64_t ChunkCacheStats::*bytes,
             std::uint64_t n) {
    std::lock_guard lock(mu_);
    ++(counters_.*reads);
    counters_.*bytes += n;
  }

  // Answers everyone waiting for the chunk. Memory keeps it for readers (and without devices);
  // a warm-up alone puts it on the devices only. `fetched`: the frame, when it came from the back
  // end; its size is reported to the warm-up that started the fetch (one that joined fetched
  // nothing).
  void finishRead(const ChunkKey& key, Result<Bytes> result, const Bytes* fetched = nullptr) {
    Pending pending;
    {
      std::lock_guard lock(mu_);
      auto it = inFlight_.find(key);
      if (it != inFlight_.end()) {
        pending = std::move(it->second);
        inFlight_.erase(it);
      }
      readerJoined_.erase(ChunkKeyHash{}(key));
      if (result && (!pending.readers.empty() || !options_.device)) insertLocked(key, *result);
    }
    for (auto& r : pending.readers) r(result);
    if (result && fetched && options_.device && !pending.warmers.empty() && !holds(key)) {
      // A warm-up joined after the fetch was offered to the devices as a reader's, not admitted.
      options_.device->insert(key, *fetched, *result, Origin::kWarmed);
    }
    const bool kept = result && !pending.warmers.empty() && holds(key);
    for (std::size_t i = 0; i < pending.warmers.size(); ++i) {
      auto& w = pending.warmers[i];
      if (!result) {
        w(failure(result.error()));
      } else if (!kept) {
        w(failure(Status::noSpace(
            fmt::format("chunk {}: the cache took no more (full, or every region protected)",
                        key.objectName()))));
      } else {
        const bool starter = i == 0 && pending.startedByWarmUp && fetched;
        w(starter ? std::uint64_t{fetched->size()} : std::uint64_t{0});
      }
    }
  }

  std::optional<Bytes> lookupLocked(const ChunkKey& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second.lruPos);
    return it->second.raw;
  }

  void insert(const ChunkKey& key, const Bytes& raw) {
    std::lock_guard lock(mu_);
    insertLocked(key, raw);
  }

  // A chunk is charged the memory its buffer takes, not its length: a 110 KB chunk sits in a
  // 112 KiB slab slot, a 4 MiB one in a pooled buffer with room for a frame header, so that
  // capacityBytes bounds the memory held (charging lengths let it be up to 12.5% over).
  void insertLocked(const ChunkKey& key, const Bytes& raw) {
    const std::uint64_t charge = memoryCharge(raw.size());
    if (charge > options_.capacityBytes || entries_.count(key)) return;
    lru_.push_front(key);
    entries_.emplace(key, Entry{raw, lru_.begin(), charge});
    bytes_ += charge;
    while (bytes_ > options_.capacityBytes) eraseLocked(lru_.back());
  }

  void eraseLocked(const ChunkKey& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    bytes_ -= it->second.charged;
    lru_.erase(it->second.lruPos);
    entries_.erase(it);
  }

  backends::ObjectStore& store_;
  const MemoryChunkCacheOptions options_;
  const std::shared_ptr<BufferPool> buffers_;

  mutable std::mutex
      mu_;  // guards everything below; never held while calling the store or a callback
  std::unordered_map<ChunkKey, Entry, ChunkKeyHash> entries_;
  std::list<ChunkKey> lru_;  // most recently used first
  std::uint64_t bytes_ = 0;
  // A chunk being read (from a device or the back end) and who waits for it.
  struct Pending {
    std::vector<Callback<Bytes>> readers;
    std::vector<Callback<std::uint64_t>> warmers;  // warm-ups and sweeps: keep it on the devices
    bool startedByWarmUp = false;                  // warmers[0] started the fetch
  };
  std::unordered_map<ChunkKey, Pending, ChunkKeyHash> inFlight_;
  ChunkCacheStats counters_;
  absl::flat_hash_set<std::uint64_t> prefetched_, prefetchedBefore_;
  absl::flat_hash_set<std::uint64_t> readerJoined_;  // fetches under way a reader waits for

  // Last: their destructors run queued tasks, which use the members above.
  ThreadPool codecPool_;
  ThreadPool devicePool_;
  // Last, so first to go: it waits for the reads in flight, whose callbacks use the pools.
  FetchScheduler scheduler_;
};

}  // namespace

std::shared_ptr<BufferPool> makeChunkBufferPool(std::uint64_t chunkBytes) {
  return std::make_shared<BufferPool>(chunkBytes + (64 << 10), 16);
}

std::unique_ptr<ChunkCache> makeMemoryChunkCache(backends::ObjectStore& store,
                                                 MemoryChunkCacheOptions options) {
  return std::make_unique<MemoryChunkCache>(store, options);
}

}  // namespace tierfs::cache
