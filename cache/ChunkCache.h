#pragma once

#include <cstdint>
#include <memory>

#include "backends/ObjectStore.h"
#include "backends/SyncStore.h"
#include "cache/ChunkCodec.h"
#include "cache/ChunkKey.h"
#include "cache/FetchScheduler.h"
#include "common/Bytes.h"

// The one header fs/ uses to reach file data: chunks by key, read through whatever cache tiers
// the daemon was built with, and written to the back end. fs/ knows nothing else of cache/.

namespace tierfs::cache {

template <typename T>
using Callback = backends::Callback<T>;

// What a chunk cache has done since it started, and holds now.
struct ChunkCacheStats {
  std::uint64_t memoryHits = 0;    // reads answered from memory (or joined to a fetch)
  std::uint64_t deviceHits = 0;    // from the cache devices
  std::uint64_t backendReads = 0;  // fetched from the back end
  std::uint64_t bytesFromDevice = 0, bytesFromBackend = 0;  // as stored (frames)
  std::uint64_t bytesFromMemory = 0;                        // decoded
  // The cache devices (all zero without them):
  std::uint64_t deviceEntries = 0, deviceUsedBytes = 0, deviceCapacityBytes = 0;
  std::uint64_t deviceOccupiedBytes = 0;  // files and index on disk
  std::uint64_t deviceEvictedRegions = 0, deviceCorruptions = 0, deviceNotAdmitted = 0;
  std::uint64_t deviceFailed = 0;                           // devices taken out of service
  std::uint64_t deviceFramedBytes = 0, deviceRawBytes = 0;  // kept, and what they decode to
  // Prefetch accuracy: chunks fetched ahead of readers (read-ahead, hints, sweeps), and how many
  // of them a reader then found in the cache (memory, a device, or the fetch still under way):
  // one evicted before a reader came is fetched again and does not count. Keys are remembered
  // for the last ~512k chunks fetched ahead.
  std::uint64_t prefetchedChunks = 0, prefetchUsed = 0;
};

// Reads and writes immutable chunk objects (frames of cache/ChunkCodec.h) through a cache.
// Concurrent reads of one chunk make one back-end request (single flight) and share its bytes.
//
// Thread-safe. Callbacks run on the cache's own threads (or the caller's, for a hit); they must
// not block. Status codes: NotFound (no such chunk object), Corruption (a damaged frame in the
// back end), AlreadyExists (write of a key that exists: keys are never reused), and the back
// end's TimedOut/Unavailable/IoError.
class ChunkCache {
 public:
  virtual ~ChunkCache() = default;

  // The raw (decoded) bytes of a chunk. `priority` orders the back-end read, if one is needed,
  // among the others (cache/FetchScheduler.h).
  virtual void read(const ChunkKey& key, Callback<Bytes> done,
                    Priority priority = Priority::kDemand) = 0;
  // A reader's own (demand) read, for a caller whose thread is free to do the work: a hit on a
  // cache device is read and checked on the caller's thread, not handed to a device thread.
  // Never call from a cache or store callback.
  virtual void readHere(const ChunkKey& key, Callback<Bytes> done) { read(key, std::move(done)); }
  // Encodes `raw` (compressing where it pays) and creates the chunk object; yields the stored
  // size. Done only when the back end has the chunk durably.
  virtual void write(const ChunkKey& key, Bytes raw, Callback<std::uint64_t> done) = 0;
  // Removes a chunk object no file refers to any more (and drops any cached copy). NotFound is
  // an answer, not a failure, for a chunk that is already gone.
  virtual void remove(const ChunkKey& key, Callback<std::uint64_t> done) = 0;
  // Bytes the chunk takes in the back end (header and compressed payload).
  virtual void storedSize(const ChunkKey& key, Callback<std::uint64_t> done) = 0;

  // Whether this node keeps the chunk: on the cache devices when there are some (what survives
  // a restart), else in memory. Answered from the index; reads no data.
  virtual bool holds(const ChunkKey& key) const = 0;
  // Makes this node keep the chunk (a warm-up): fetched from the back end unless held already,
  // checked, and put on the devices whatever the admission policy. Yields the stored bytes
  // fetched (0 when it was held); NoSpace when the cache did not take it.
  virtual void warm(const ChunkKey& key, Callback<std::uint64_t> done,
                    Priority priority = Priority::kWarm) = 0;
  // Drops the chunk from every tier of this node (the back end keeps it).
  virtual void evict(const ChunkKey& key) = 0;
  // Bytes the cache devices can still take before they must evict (0 without devices).
  virtual std::uint64_t roomBytes() const = 0;
  // What a chunk of `rawBytes` decoded bytes is charged in the memory tier: the buffer holding it.
  virtual std::uint64_t memoryCharge(std::uint64_t rawBytes) const { return rawBytes; }

  virtual ChunkCacheStats stats() const = 0;
};

class DeviceTier;

// The buffers a cache of `chunkBytes` chunks reads into: room for a chunk's frame header and a
// device's alignment padding too; at most 16 wait idle (64 MiB of 4 MiB chunks).
std::shared_ptr<BufferPool> makeChunkBufferPool(std::uint64_t chunkBytes);

struct MemoryChunkCacheOptions {
  // Memory for decoded chunks, each charged the buffer it occupies (BufferPool::footprint): what
  // concurrent readers share and read-ahead fills (the kernel's page cache keeps what was read).
  std::uint64_t capacityBytes = 128 << 20;
  CodecOptions codec;         // how new chunks are encoded
  unsigned codecThreads = 2;  // chunks over 256 KiB are checked and decompressed here
  // The cache devices between memory and the back end (not owned; null: none), and the
  // threads that read them (a device answers many reads at once).
  DeviceTier* device = nullptr;
  unsigned deviceThreads = 8;
  FetchSchedulerOptions fetch;         // limits and priorities of back-end reads
  std::uint64_t chunkBytes = 4 << 20;  // the volume's chunk size: a read's expected bytes
  // Chunks fetched or decoded go into these buffers (null: a pool of chunkBytes of the cache's
  // own); the cache devices read into them too when they share it (see BufferPool).
  std::shared_ptr<BufferPool> buffers;
};

// A chunk cache in process memory (LRU by bytes) over an object store, with the cache devices
// (options.device) between them when the daemon has some: a miss in memory looks there, a miss
// there fetches from the store and keeps the frame there too, and chunks written go there
// (write-through). Owns neither the store nor the devices, which must outlive it.
std::unique_ptr<ChunkCache> makeMemoryChunkCache(backends::ObjectStore& store,
                                                 MemoryChunkCacheOptions options);

}  // namespace tierfs::cache
