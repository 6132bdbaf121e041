#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/ChunkKey.h"
#include "cache/Device.h"
#include "cache/IndexDb.h"
#include "common/BufferPool.h"
#include "common/Bytes.h"
#include "common/Result.h"
#include "common/Status.h"

// The log-structured store of the cache devices (after CacheLib's Navy block cache): entries
// (a header and the bytes) are appended to an open region buffer in memory; a full region is
// written to its device in large I/Os, made durable, and only then recorded in the IndexDb
// (sealed). Eviction frees whole regions, so a device sees only large sequential writes.
//
// The hot-path index is in memory: a flat hash map from a 64-bit hash of the key to the entry's
// place (region, offset, length), 24 bytes a slot (see docs/CACHE.md for the bytes per entry).
// The entry's header on the device holds the whole key and the payload's XXH3, so a hash
// collision or a damaged entry is found on the read and turned into a miss.
namespace tierfs::cache {

enum class EvictionPolicy {
  kFifo,      // the region sealed first goes first
  kLru,       // the region read least recently goes first
  kTraining,  // scan-resistant: a region read within `protectFor` is never evicted; when all
              // are, new entries are not admitted, so a dataset larger than the cache keeps a
              // stable resident part over shuffled epochs (CoorDL's MinIO)
};

struct RegionCacheOptions {
  std::uint32_t regionSize = 16 << 20;
  EvictionPolicy eviction = EvictionPolicy::kLru;
  std::chrono::seconds protectFor{3600};  // kTraining only
  // Regions being filled or sealed at once, each a buffer of regionSize in memory; an insert
  // that finds all of them waiting for their device is not admitted.
  unsigned buffers = 3;
  // A partly filled region is sealed after this long without an insert, so that what a daemon
  // cached survives a kill -9 a little later (0: only full regions are sealed).
  std::chrono::milliseconds sealWhenIdle{1000};
  // A device whose reads or writes fail (or return damaged entries) this many times in a row is
  // taken out of service: its entries become misses and nothing more is written to it.
  unsigned deviceErrorLimit = 8;
  // Entries in sealed regions at most (bounds the memory index and the IndexDb's size).
  std::uint64_t maxEntries = 1 << 24;
  // Test hook: called before each step of sealing a region; returning false stops the seal
  // there, as a crash would (the region stays unsealed until the cache is abandoned).
  enum class SealStep { kWrite, kFlush, kRecord };
  std::function<bool(SealStep)> sealHook;
  // Watermarks, as fractions of the regions of the devices in service: once more than
  // `highWatermark` of them hold data, the sealer evicts until at most `lowWatermark` do, so that
  // inserts find free regions ready. The defaults evict only when no region is free.
  double highWatermark = 1.0;
  double lowWatermark = 1.0;
  // Where lookups read entries into (null: a buffer allocated for each read); a pool shared with
  // the memory cache lets a chunk read from a device be kept there without a copy (BufferPool).
  std::shared_ptr<BufferPool> readBuffers;
};

struct RegionCacheStats {
  std::uint64_t hits = 0, misses = 0;
  std::uint64_t corruptions = 0;  // entries whose bytes failed their checksum or could not be read
  std::uint64_t inserted = 0, notAdmitted = 0;
  std::uint64_t evictedRegions = 0;
  std::uint64_t sealedRegions = 0;     // now
  std::uint64_t entries = 0;           // now, in sealed and open regions
  std::uint64_t recordedEntries = 0;   // in the IndexDb's records (bounded by maxEntries)
  std::uint64_t usedBytes = 0;         // bytes of entries in sealed regions
  std::uint64_t capacityBytes = 0;     // of all regions
  std::uint64_t indexMemoryBytes = 0;  // the in-memory index (slots and control bytes)
  std::uint64_t failedDevices = 0;     // taken out of service
};

// One cache device as the region cache sees it.
struct DeviceUsage {
  std::string name;
  std::uint64_t usedBytes = 0;      // entries in its sealed regions
  std::uint64_t capacityBytes = 0;  // of its regions
  bool failed = false;              // taken out of service
};

class RegionCache {
 public:
  // Opens the cache over `devices` (each cut into regions of options.regionSize) and the
  // index `db`, whose records come back into the memory index: a restarted cache serves what
  // it had sealed. Neither devices nor db are owned; they must outlive the cache.
  static Result<std::unique_ptr<RegionCache>> open(std::vector<Device*> devices, IndexDb& db,
                                                   RegionCacheOptions options);
  ~RegionCache();  // seals what is buffered (a clean shutdown)

  // The bytes cached for `key`, checked against their checksum; nullopt for a miss. A damaged or
  // unreadable entry is dropped, counted, and is a miss.
  std::optional<Bytes> lookup(const ChunkKey& key);
  // Whether `key` is cached, from the memory index alone (no I/O, so not verified).
  bool contains(const ChunkKey& key) const;
  // Adds `bytes` under `key` (a newer entry replaces an older one); false when not admitted
  // (bigger than a region, every buffer busy, or the policy keeps what is cached).
  bool insert(const ChunkKey& key, std::string_view bytes);
  void erase(const ChunkKey& key);

  // Seals the partly filled region, and waits until every region handed to the sealer is
  // sealed: for a clean shutdown and for tests.
  Status flush();
  // Stops without sealing anything more (a crash, for tests): what was not sealed is lost.
  void abandon();

  RegionCacheStats stats() const;
  std::vector<DeviceUsage> deviceUsage() const;

  struct Impl;

 private:
  explicit RegionCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tierfs::cache
