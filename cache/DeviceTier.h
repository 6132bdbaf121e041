#pragma once

#include <absl/container/flat_hash_set.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/ChunkKey.h"
#include "cache/Device.h"
#include "cache/ListingCache.h"
#include "cache/RegionCache.h"
#include "common/Bytes.h"
#include "common/Result.h"

// The cache on local devices (NVMe): the devices, the RocksDB index and the region cache over
// them, set up from the [cache] config. The chunk cache (cache/ChunkCache.h) keeps chunk frames
// here, between its memory tier and the back end.
namespace tierfs::cache {

struct DeviceSpec {
  std::string path;
  std::uint64_t size = 0;  // bytes the device may occupy; for the first, its index included
};

// Why a chunk is offered to the devices.
enum class Origin {
  kFetched,  // read from the back end for a reader
  kWritten,  // just written through this node
  kWarmed,   // asked for by a warm-up: always admitted
};

// Which chunks go onto the devices.
enum class Admission {
  kAlways,      // every chunk read from the back end or written
  kSecondMiss,  // a chunk read from the back end for the second time recently; nothing written:
                // a one-off scan (a checkpoint read, a cp of a big file) leaves the cache alone
};

struct DeviceTierOptions {
  std::vector<DeviceSpec> devices;
  std::string indexDir;  // the RocksDB index; empty: "<first device's path>.index"
  RegionCacheOptions regions;
  // Keep chunks as the back end stores them (compressed where that paid: more fit) or
  // decompressed (less CPU on a hit).
  bool storeCompressed = true;
  Admission admission = Admission::kAlways;
  // What the cached bytes belong to (the volume's id): a cache made for another volume is
  // emptied when opened.
  std::string owner;
  // Tests only: wrap each device in a FaultyDevice driven by this control file
  // (cache/FaultyDevice.h); the daemon sets it from TIERFS_TEST_CACHE_FAULTS.
  std::string faultFile;
};

// The index's share of the first device's size: its RocksDB files stay under it (the entry
// limit and the listing budget below are derived from it), so devices and index together never
// exceed the config.
std::uint64_t indexReserve(std::uint64_t firstDeviceSize);
// Entries the index may record within `reserve` bytes of disk (three quarters of it).
std::uint64_t maxEntriesFor(std::uint64_t reserve);
// Bytes of directory listings the index may keep: an eighth of `reserve`, since RocksDB may
// take up to twice their size on disk (the last quarter).
std::uint64_t listingBudgetFor(std::uint64_t reserve);

class DeviceTier {
 public:
  static Result<std::unique_ptr<DeviceTier>> open(DeviceTierOptions options);
  ~DeviceTier();

  // A chunk's frame, verified against the entry's checksum; nullopt for a miss.
  std::optional<Bytes> lookup(const ChunkKey& key) { return regions_->lookup(key); }
  bool contains(const ChunkKey& key) const { return regions_->contains(key); }
  // Keeps a chunk's frame (as the back end has it), or a frame of its `raw` bytes without
  // compression when the tier keeps chunks decompressed, if the admission policy lets it in.
  void insert(const ChunkKey& key, const Bytes& frame, const Bytes& raw, Origin origin);
  void erase(const ChunkKey& key) { regions_->erase(key); }

  // Directory listings, in the same RocksDB as the index.
  ListingCache& listings() { return *listings_; }

  RegionCacheStats stats() const { return regions_->stats(); }
  std::vector<DeviceUsage> deviceUsage() const { return regions_->deviceUsage(); }
  // Bytes the devices' files and the index occupy on disk now.
  std::uint64_t occupiedBytes() const;
  const DeviceTierOptions& options() const { return options_; }
  // Frames kept, and what they hold decompressed: the capacity gained by compression.
  std::uint64_t framedBytes() const;
  std::uint64_t rawBytes() const;
  // Chunks the admission policy kept out.
  std::uint64_t refused() const;

 private:
  DeviceTier() = default;

  DeviceTierOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<IndexDb> db_;
  std::unique_ptr<RegionCache> regions_;
  std::unique_ptr<ListingCache> listings_;
  bool admit(const ChunkKey& key, Origin origin);

  mutable std::mutex mu_;
  std::uint64_t framedBytes_ = 0, rawBytes_ = 0, refused_ = 0;
  // kSecondMiss: the keys missed once lately, in two generations (the older is dropped when the
  // newer is full), so remembering costs a bounded ~16 bytes a key.
  absl::flat_hash_set<std::uint64_t> seen_, seenBefore_;
};

}  // namespace tierfs::cache
