#pragma once

#include <string_view>

#include "cache/ChunkCache.h"
#include "cache/DeviceTier.h"
#include "common/Result.h"
#include "tools/ConfigFile.h"

// The [cache] section: the memory tier, and the cache devices with their regions and policies.
//
//   [cache]
//   memory_size = "128M"       # decoded chunks in memory
//   region_size = "16M"        # the unit of device writes and of eviction
//   eviction = "lru"           # "fifo", "lru" or "training" (scan-resistant, for epochs)
//   protect_for = "1h"         # training: a region read within this is never evicted
//   store_compressed = true    # keep chunks as stored (more fit) or decompressed (less CPU)
//   admission = "always"       # or "second_miss": a one-off scan does not flush the cache
//   index_dir = "..."          # default: the first device's path + ".index"
//   [[cache.device]]
//   path = "/var/cache/tierfs/cache0"
//   size = "100G"              # what the device may occupy (the first: index included)
namespace tierfs::tools {

Status readCacheSection(const ConfigSection& s, cache::MemoryChunkCacheOptions& memory,
                        cache::DeviceTierOptions& devices);

// --cache-device PATH=SIZE
Result<cache::DeviceSpec> parseDeviceFlag(std::string_view text);

}  // namespace tierfs::tools
