#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backends/StoreFactory.h"
#include "cache/ChunkCache.h"
#include "fs/Filesystem.h"
#include "fs/fuse/FuseServer.h"
#include "tools/BackendOptions.h"

namespace tierfs::tools {

// The command line of `tierfs mount`: flags override the config file's keys.
struct MountArgs {
  BackendOptions backend;
  std::vector<std::string> positional;  // [CONFIG] MOUNTPOINT
  bool foreground = false;
  bool readOnly = false;
  bool allowOther = false;
  bool debug = false;
  std::string attrTimeout, entryTimeout, cacheMemory, compression, logFile;
  unsigned threads = 0;
};

// Everything the daemon is built from.
struct DaemonConfig {
  backends::StoreConfig store;
  fs::MountOptions mount;
  fs::FsOptions fs;
  cache::MemoryChunkCacheOptions cache;
  std::optional<cache::Codec> codec;  // overrides the volume's default codec
  std::optional<int> zstdLevel;
};

void addMountFlags(CLI::App& cmd, MountArgs& args);

// Reads [backend], [fuse], [cache] and [fs] of the config file (the first positional argument
// when there are two, or --config), then applies the flags. Errors name file:line or the flag.
Result<DaemonConfig> resolveDaemonConfig(MountArgs& args);

}  // namespace tierfs::tools
