#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/FaultyStore.h"
#include "backends/StoreFactory.h"
#include "cache/ChunkCache.h"
#include "cache/DeviceTier.h"
#include "fs/Filesystem.h"
#include "fs/Volume.h"
#include "fs/fuse/FuseServer.h"
#include "tools/BackendOptions.h"
#include "tools/CliApp.h"

namespace tierfs::tools {

// The command line of `tierfs mount`: flags override the config file's keys.
struct MountArgs {
  BackendOptions backend;
  std::vector<std::string> positional;  // [CONFIG] MOUNTPOINT
  bool foreground = false;
  bool readOnly = false;
  bool allowOther = false;
  bool debug = false;
  std::string attrTimeout, entryTimeout, cacheMemory, readAhead, compression, logFile;
  std::vector<std::string> cacheDevices;  // PATH=SIZE
  std::string cacheEviction;
  std::string controlSocket;
  unsigned threads = 0;
};

// [metrics]: the Prometheus endpoint. Off by default; when on, bound to loopback unless the
// address names another interface.
struct MetricsConfig {
  bool enabled = false;
  std::string address = "127.0.0.1:9464";  // HOST:PORT
};

// [logging]: where the daemon's log goes and how much of it.
struct LoggingConfig {
  std::string level = "info";                        // trace, debug, info, warn, error, off
  std::string target = "stderr";                     // "stderr", "journal", or a file path
  Duration repeatWindow = std::chrono::seconds(10);  // one line per repeated error per window
};

// [advisor]: the SHARDS sampler behind `tierfs advise`.
struct AdvisorConfig {
  bool enabled = true;
  double sampleRate = 0.01;         // the initial spatial sampling rate
  std::uint32_t maxSamples = 8192;  // per curve: bounds memory (fixed-size SHARDS)
  std::string tracePath;            // when set, every chunk access is appended here
};

// Everything the daemon is built from.
struct DaemonConfig {
  backends::StoreConfig store;
  fs::MountOptions mount;
  fs::FsOptions fs;
  cache::MemoryChunkCacheOptions cache;
  cache::DeviceTierOptions devices;   // no devices: memory only
  std::optional<cache::Codec> codec;  // overrides the volume's default codec
  std::optional<int> zstdLevel;
  std::string controlSocket;                // empty: control::defaultSocketPath(mountpoint)
  std::vector<uid_t> controlUsers;          // [control] allow_users: let in besides root, owner
  std::vector<gid_t> controlGroups;         // [control] allow_groups
  std::vector<backends::FaultRule> faults;  // [[fault]]: tests and benchmarks only
  MetricsConfig metrics;
  LoggingConfig logging;
  AdvisorConfig advisor;
};

void addMountFlags(CLI::App& cmd, MountArgs& args);
// The flags of addMountFlags without its positional [CONFIG] MOUNTPOINT (`tierfs config show`).
void addMountOptions(CLI::App& cmd, MountArgs& args);

// The config file's settings (the one args.backend names, else TIERFS_CONFIG, else
// /etc/tierfs/tierfs.toml when it exists) with the flags applied: all but the mount point's.
Result<DaemonConfig> resolveSettings(const MountArgs& args);

// Reads [backend], [fuse], [cache] and [fs] of the config file (the first positional argument
// when there are two, or --config), then applies the flags. Errors name file:line or the flag.
Result<DaemonConfig> resolveDaemonConfig(MountArgs& args);

// Reads the [fuse], [cache] and [fs] sections of a config file into `cfg`: the settings that the
// daemon shares with the commands that open a volume without a mount (import, export).
Status readDaemonSections(const std::string& file, DaemonConfig& cfg);

// The store a daemon uses when no back end is configured: the embedded dir back end.
std::string defaultStorePath();

// When [prefetch]'s window or budget is more than the memory cache can keep ahead of readers
// (fs::fitReadAheadToMemory), a sentence saying what the daemon uses instead; else empty.
std::string readAheadClampNote(const DaemonConfig& cfg);

// A Filesystem built from a back end as the daemon builds it. The members are destroyed in
// reverse order: the filesystem (which commits what is unflushed) before what it uses.
struct FsStack {
  std::unique_ptr<backends::ObjectStore> backend;  // under `store` when faults are injected
  std::unique_ptr<backends::ObjectStore> store;
  std::unique_ptr<fs::Volume> volume;
  std::unique_ptr<cache::DeviceTier> devices;
  std::unique_ptr<cache::ChunkCache> chunks;
  std::shared_ptr<BufferPool> buffers;  // the chunks' buffers (cache::makeChunkBufferPool)
  std::unique_ptr<cache::SizingAdvisor> advisor;  // null when [advisor] is off
  std::uint64_t cacheBytes = 0;                   // memory and devices: what the advisor judges
  std::unique_ptr<fs::Filesystem> filesystem;
};

// Opens the store and its volume (creating one when the store has none and `autoMkfs`), then the
// chunk cache (the codec: cfg's, else the volume's default) and the Filesystem.
Result<std::unique_ptr<FsStack>> openFilesystem(const DaemonConfig& cfg, bool autoMkfs);

}  // namespace tierfs::tools
