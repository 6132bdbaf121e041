#include "tools/MountConfig.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "common/Units.h"
#include "common/control/Socket.h"
#include "tools/CacheConfig.h"
#include "tools/ConfigFile.h"
#include "tools/FaultConfig.h"
#include "tools/Logging.h"

namespace tierfs::tools {
namespace {

std::uint32_t readAheadKb(std::uint64_t bytes) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes >> 10, 1 << 20));
}

Status readFuse(const ConfigSection& s, DaemonConfig& cfg) {
  TIERFS_RETURN_IF_ERROR(
      s.checkKeys({"attr_timeout", "entry_timeout", "negative_timeout", "allow_other", "read_only",
                   "max_read", "read_ahead", "max_background", "threads"}));
  fs::MountOptions& m = cfg.mount;
  TIERFS_RETURN_IF_ERROR(s.getDuration("attr_timeout", m.attrTimeout));
  TIERFS_RETURN_IF_ERROR(s.getDuration("entry_timeout", m.entryTimeout));
  TIERFS_RETURN_IF_ERROR(s.getDuration("negative_timeout", m.negativeTimeout));
  TIERFS_RETURN_IF_ERROR(s.getBool("allow_other", m.allowOther));
  TIERFS_RETURN_IF_ERROR(s.getBool("read_only", m.readOnly));
  std::uint64_t maxRead = m.maxRead, readAhead = std::uint64_t{m.readAheadKb} << 10;
  TIERFS_RETURN_IF_ERROR(s.getSize("max_read", maxRead));
  TIERFS_RETURN_IF_ERROR(s.getSize("read_ahead", readAhead));
  if (maxRead < 4096 || maxRead > (1 << 20)) return s.problem("max_read", "must be from 4K to 1M");
  m.maxRead = static_cast<std::uint32_t>(maxRead);
  m.readAheadKb = readAheadKb(readAhead);
  std::int64_t threads = m.maxThreads, background = m.maxBackground;
  TIERFS_RETURN_IF_ERROR(s.getInt("threads", 1, 1024, threads));
  TIERFS_RETURN_IF_ERROR(s.getInt("max_background", 1, 65535, background));
  m.maxThreads = static_cast<unsigned>(threads);
  m.maxBackground = static_cast<std::uint16_t>(background);
  return Status::ok();
}

Status readFs(const ConfigSection& s, DaemonConfig& cfg) {
  TIERFS_RETURN_IF_ERROR(
      s.checkKeys({"compression", "zstd_level", "dirty_limit", "gc_delay", "readdir_page"}));
  std::string codec;
  TIERFS_RETURN_IF_ERROR(s.getString("compression", codec));
  if (!codec.empty() && codec != "zstd" && codec != "none") {
    return s.problem("compression", fmt::format("must be \"zstd\" or \"none\", not \"{}\"", codec));
  }
  if (!codec.empty()) cfg.codec = codec == "none" ? cache::Codec::kNone : cache::Codec::kZstd;
  std::int64_t level = 0, page = cfg.fs.readdirPage;
  TIERFS_RETURN_IF_ERROR(s.getInt("zstd_level", -7, 22, level));
  if (level != 0) cfg.zstdLevel = static_cast<int>(level);
  TIERFS_RETURN_IF_ERROR(s.getSize("dirty_limit", cfg.fs.dirtyLimitPerFile));
  TIERFS_RETURN_IF_ERROR(s.getDuration("gc_delay", cfg.fs.gcDelay));
  TIERFS_RETURN_IF_ERROR(s.getInt("readdir_page", 16, 100000, page));
  cfg.fs.readdirPage = static_cast<std::uint32_t>(page);
  return Status::ok();
}

Status readPrefetch(const ConfigSection& s, DaemonConfig& cfg) {
  TIERFS_RETURN_IF_ERROR(
      s.checkKeys({"max_window", "read_ahead_budget", "max_in_flight", "max_in_flight_bytes",
                   "background_share", "background_bandwidth", "sweep", "sweep_after"}));
  TIERFS_RETURN_IF_ERROR(s.getBool("sweep", cfg.fs.sweep.enabled));
  std::int64_t after = cfg.fs.sweep.after;
  TIERFS_RETURN_IF_ERROR(s.getInt("sweep_after", 2, 1 << 20, after));
  cfg.fs.sweep.after = static_cast<unsigned>(after);
  fs::ReadAheadOptions& r = cfg.fs.readAhead;
  TIERFS_RETURN_IF_ERROR(s.getSize("max_window", r.maxWindow));
  TIERFS_RETURN_IF_ERROR(s.getSize("read_ahead_budget", r.budget));
  cache::FetchSchedulerOptions& f = cfg.cache.fetch;
  std::int64_t inFlight = f.maxInFlight, share = f.backgroundPercent;
  TIERFS_RETURN_IF_ERROR(s.getInt("max_in_flight", 1, 4096, inFlight));
  TIERFS_RETURN_IF_ERROR(s.getInt("background_share", 1, 100, share));
  f.maxInFlight = static_cast<unsigned>(inFlight);
  f.backgroundPercent = static_cast<unsigned>(share);
  TIERFS_RETURN_IF_ERROR(s.getSize("max_in_flight_bytes", f.maxInFlightBytes));
  return s.getSize("background_bandwidth", f.backgroundBytesPerSecond);  // bytes per second
}

// A user or group as the config names it: a decimal id, or a name this node knows.
std::optional<std::uint32_t> idOf(const std::string& nameOrId, bool isGroup) {
  std::uint32_t id = 0;
  const char* end = nameOrId.data() + nameOrId.size();
  if (auto [at, ec] = std::from_chars(nameOrId.data(), end, id); ec == std::errc() && at == end) {
    return id;
  }
  if (isGroup) {
    const struct group* g = ::getgrnam(nameOrId.c_str());
    return g ? std::optional<std::uint32_t>(g->gr_gid) : std::nullopt;
  }
  const struct passwd* p = ::getpwnam(nameOrId.c_str());
  return p ? std::optional<std::uint32_t>(p->pw_uid) : std::nullopt;
}

template <typename Id>
Status readIds(const ConfigSection& s, const char* key, bool isGroup, std::vector<Id>& out) {
  std::vector<std::string> names;
  TIERFS_RETURN_IF_ERROR(s.getNamesOrIds(key, names));
  for (const std::string& name : names) {
    auto id = idOf(name, isGroup);
    if (!id) {
      return s.problem(key, fmt::format("names {} '{}', which this node does not know",
                                        isGroup ? "group" : "user", name));
    }
    out.push_back(static_cast<Id>(*id));
  }
  return Status::ok();
}

Status readControl(const ConfigSection& s, DaemonConfig& cfg) {
  TIERFS_RETURN_IF_ERROR(s.checkKeys({"socket", "allow_users", "allow_groups"}));
  TIERFS_RETURN_IF_ERROR(s.getString("socket", cfg.controlSocket));
  if (!cfg.controlSocket.empty() && cfg.controlSocket.front() != '/') {
    return s.problem("socket",
                     fmt::format("must be an absolute path, not '{}'", cfg.controlSocket));
  }
  TIERFS_RETURN_IF_ERROR(readIds(s, "allow_users", false, cfg.controlUsers));
  return readIds(s, "allow_groups", true, cfg.controlGroups);
}

// HOST:PORT: a port from 1 to 65535 after the last colon, and a host (a name, an IPv4 address
// or a bracketed IPv6 one). Returns what is wrong, "" when nothing is.
std::string addressProblem(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return "must be HOST:PORT, e.g. 127.0.0.1:9464";
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  std::int64_t number = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (ec != std::errc() || end != port.data() + port.size() || number < 1 || number > 65535) {
    return fmt::format("'{}': the port must be a number from 1 to 65535", address);
  }
  const bool bracketed = host.front() == '[' && host.back() == ']';
  const bool nameChars = host.find_first_not_of(
                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                             "0123456789.-") == std::string::npos;
  if (!(bracketed && host.size() > 2) && !nameChars) {
    return fmt::format("'{}': the host must be a name, an IPv4 address or [IPv6]", address);
  }
  return "";
}

Status readMetrics(const ConfigSection& s, MetricsConfig& m) {
  TIERFS_RETURN_IF_ERROR(s.checkKeys({"enabled", "address"}));
  TIERFS_RETURN_IF_ERROR(s.getBool("enabled", m.enabled));
  TIERFS_RETURN_IF_ERROR(s.getString("address", m.address));
  const std::string problem = addressProblem(m.address);
  return problem.empty() ? Status::ok() : s.problem("address", problem);
}

Status readLogging(const ConfigSection& s, LoggingConfig& l) {
  TIERFS_RETURN_IF_ERROR(s.checkKeys({"level", "target", "repeat_window"}));
  TIERFS_RETURN_IF_ERROR(s.getString("level", l.level));
  if (!logLevelNamed(l.level)) {
    return s.problem("level",
                     fmt::format("must be one of {}, not \"{}\"", kLogLevelNames, l.level));
  }
  TIERFS_RETURN_IF_ERROR(s.getString("target", l.target));
  if (const std::string problem = logTargetProblem(l.target); !problem.empty()) {
    return s.problem("target", problem);
  }
  TIERFS_RETURN_IF_ERROR(s.getDuration("repeat_window", l.repeatWindow));
  if (l.repeatWindow > std::chrono::hours(24)) {
    return s.problem("repeat_window", "must be at most 24h");
  }
  return Status::ok();
}

Status readAdvisor(const ConfigSection& s, AdvisorConfig& a) {
  TIERFS_RETURN_IF_ERROR(s.checkKeys({"enabled", "sample_rate", "max_samples", "trace_file"}));
  TIERFS_RETURN_IF_ERROR(s.getBool("enabled", a.enabled));
  TIERFS_RETURN_IF_ERROR(s.getDouble("sample_rate", a.sampleRate));
  if (!(a.sampleRate > 0 && a.sampleRate <= 1)) {
    return s.problem("sample_rate",
                     fmt::format("must be more than 0 and at most 1, not {}", a.sampleRate));
  }
  std::int64_t samples = a.maxSamples;
  // why: below 64 samples a curve is noise; above 2^24 its memory (~40 B each) passes 600 MiB
  TIERFS_RETURN_IF_ERROR(s.getInt("max_samples", 64, 1 << 24, samples));
  a.maxSamples = static_cast<std::uint32_t>(samples);
  TIERFS_RETURN_IF_ERROR(s.getString("trace_file", a.tracePath));
  if (!a.tracePath.empty() && a.tracePath.front() != '/') {
    return s.problem("trace_file", fmt::format("must be an absolute path, not '{}'", a.tracePath));
  }
  return Status::ok();
}

Status applyFlags(const MountArgs& a, DaemonConfig& cfg) {
  if (a.readOnly) cfg.mount.readOnly = true;
  if (a.allowOther) cfg.mount.allowOther = true;
  if (a.debug) cfg.mount.debug = true;
  if (a.debug) cfg.logging.level = "debug";
  // Absolute: what `config show` prints must pass `config check`.
  if (!a.logFile.empty()) cfg.logging.target = std::filesystem::absolute(a.logFile).string();
  if (a.threads) cfg.mount.maxThreads = a.threads;
  if (!a.attrTimeout.empty()) {
    TIERFS_ASSIGN_OR_RETURN(cfg.mount.attrTimeout, parseDuration(a.attrTimeout));
  }
  if (!a.entryTimeout.empty()) {
    TIERFS_ASSIGN_OR_RETURN(cfg.mount.entryTimeout, parseDuration(a.entryTimeout));
  }
  if (!a.readAhead.empty()) {
    TIERFS_ASSIGN_OR_RETURN(std::uint64_t bytes, parseSize(a.readAhead));
    cfg.mount.readAheadKb = readAheadKb(bytes);
  }
  if (!a.cacheMemory.empty()) {
    TIERFS_ASSIGN_OR_RETURN(cfg.cache.capacityBytes, parseSize(a.cacheMemory));
  }
  for (const std::string& d : a.cacheDevices) {
    TIERFS_ASSIGN_OR_RETURN(auto spec, parseDeviceFlag(d));
    cfg.devices.devices.push_back(std::move(spec));
  }
  if (!a.cacheEviction.empty()) {
    cfg.devices.regions.eviction = a.cacheEviction == "fifo"  ? cache::EvictionPolicy::kFifo
                                   : a.cacheEviction == "lru" ? cache::EvictionPolicy::kLru
                                                              : cache::EvictionPolicy::kTraining;
  }
  if (!a.controlSocket.empty()) cfg.controlSocket = a.controlSocket;
  if (!a.compression.empty()) {
    cfg.codec = a.compression == "none" ? cache::Codec::kNone : cache::Codec::kZstd;
  }
  return Status::ok();
}

}  // namespace

void addMountFlags(CLI::App& cmd, MountArgs& a) {
  cmd.add_option("args", a.positional, "[CONFIG] MOUNTPOINT")->required()->expected(1, 2);
  addMountOptions(cmd, a);
}

void addMountOptions(CLI::App& cmd, MountArgs& a) {
  cmd.add_flag("-f,--foreground", a.foreground, "stay in the foreground");
  cmd.add_flag("--read-only", a.readOnly, "read-only mount (datasets): no open/close round trips");
  cmd.add_flag("--allow-other", a.allowOther, "let other users in (permissions still apply)");
  cmd.add_flag("-d,--debug", a.debug, "log every FUSE request");
  cmd.add_option("--attr-timeout", a.attrTimeout, "kernel attribute cache time (e.g. 1s)");
  cmd.add_option("--entry-timeout", a.entryTimeout, "kernel name cache time (e.g. 1s)");
  cmd.add_option("--read-ahead", a.readAhead, "kernel read-ahead per file (e.g. 16M; 0: kernel's)");
  cmd.add_option("--cache-memory", a.cacheMemory, "chunk cache in memory (e.g. 256M)");
  // One value per flag: a list-valued option would also swallow the mount point after it.
  cmd.add_option("--cache-device", a.cacheDevices,
                 "cache device PATH=SIZE (a file, preallocated; repeatable)")
      ->allow_extra_args(false);
  cmd.add_option("--cache-eviction", a.cacheEviction, "cache eviction policy")
      ->check(CLI::IsMember({"fifo", "lru", "training"}));
  cmd.add_option("--compression", a.compression, "codec of new chunks on this mount")
      ->check(CLI::IsMember({"zstd", "none"}));
  cmd.add_option("--threads", a.threads, "FUSE worker threads")->check(CLI::Range(1, 1024));
  cmd.add_option("--control-socket", a.controlSocket,
                 "the control socket (default /run/tierfs/<mount point>.sock)");
  cmd.add_option("--log", a.logFile, "log file (default: standard error in the foreground)");
}

Result<DaemonConfig> resolveSettings(const MountArgs& args) {
  DaemonConfig cfg;
  TIERFS_ASSIGN_OR_RETURN(cfg.store, args.backend.resolve());
  const std::string file = args.backend.configFile();
  if (!file.empty()) TIERFS_RETURN_IF_ERROR(readDaemonSections(file, cfg));
  TIERFS_RETURN_IF_ERROR(applyFlags(args, cfg));
  cfg.fs.attrTimeout = cfg.mount.attrTimeout;
  cfg.fs.readOnly = cfg.mount.readOnly;
  return cfg;
}

Result<DaemonConfig> resolveDaemonConfig(MountArgs& args) {
  if (args.positional.size() == 2) args.backend.setConfigFile(args.positional.front());
  TIERFS_ASSIGN_OR_RETURN(DaemonConfig cfg, resolveSettings(args));
  cfg.mount.mountpoint = args.positional.back();
  if (cfg.controlSocket.empty()) {
    cfg.controlSocket = control::defaultSocketPath(
        std::filesystem::absolute(cfg.mount.mountpoint).lexically_normal().string());
  }
  cfg.fs.controlSocket = cfg.controlSocket;
  return cfg;
}

Status readDaemonSections(const std::string& file, DaemonConfig& cfg) {
  TIERFS_ASSIGN_OR_RETURN(toml::table root, parseConfigFile(file));
  TIERFS_RETURN_IF_ERROR(readFuse(ConfigSection(root["fuse"].as_table(), file, "fuse"), cfg));
  TIERFS_RETURN_IF_ERROR(readCacheSection(ConfigSection(root["cache"].as_table(), file, "cache"),
                                          cfg.cache, cfg.devices));
  TIERFS_RETURN_IF_ERROR(
      readPrefetch(ConfigSection(root["prefetch"].as_table(), file, "prefetch"), cfg));
  TIERFS_RETURN_IF_ERROR(
      readControl(ConfigSection(root["control"].as_table(), file, "control"), cfg));
  TIERFS_ASSIGN_OR_RETURN(cfg.faults, readFaults(ConfigSection(&root, file, "")));
  TIERFS_RETURN_IF_ERROR(
      readMetrics(ConfigSection(root["metrics"].as_table(), file, "metrics"), cfg.metrics));
  TIERFS_RETURN_IF_ERROR(
      readLogging(ConfigSection(root["logging"].as_table(), file, "logging"), cfg.logging));
  TIERFS_RETURN_IF_ERROR(
      readAdvisor(ConfigSection(root["advisor"].as_table(), file, "advisor"), cfg.advisor));
  return readFs(ConfigSection(root["fs"].as_table(), file, "fs"), cfg);
}

std::string readAheadClampNote(const DaemonConfig& cfg) {
  const fs::ReadAheadOptions& want = cfg.fs.readAhead;
  const fs::ReadAheadOptions used = fs::fitReadAheadToMemory(want, cfg.cache.capacityBytes);
  if (used.maxWindow == want.maxWindow && used.budget == want.budget) return {};
  return fmt::format(
      "[prefetch] max_window {} and read_ahead_budget {} need a memory cache of 4x and 2x them "
      "(memory_size is {}): read-ahead would evict its own chunks before they are read; using "
      "max_window {} and read_ahead_budget {}",
      sizeForConfig(want.maxWindow), sizeForConfig(want.budget),
      sizeForConfig(cfg.cache.capacityBytes), sizeForConfig(used.maxWindow),
      sizeForConfig(used.budget));
}

std::string defaultStorePath() {
  if (geteuid() == 0) return "/var/lib/tierfs/store";
  const char* home = std::getenv("HOME");
  return fmt::format("{}/.local/share/tierfs/store", home ? home : ".");
}

Result<std::unique_ptr<FsStack>> openFilesystem(const DaemonConfig& cfg, bool autoMkfs) {
  auto stack = std::make_unique<FsStack>();
  TIERFS_ASSIGN_OR_RETURN(stack->store, backends::openStore(cfg.store));
  if (!cfg.faults.empty()) {
    spdlog::warn("{} injected fault rule(s) from [[fault]]: for tests only", cfg.faults.size());
    stack->backend = std::move(stack->store);
    auto faulty = std::make_unique<backends::FaultyStore>(*stack->backend, 1);
    for (const auto& rule : cfg.faults) faulty->addRule(rule);
    stack->store = std::move(faulty);
  }
  auto volume = fs::Volume::open(*stack->store);
  if (!volume && volume.error().isNotFound() && autoMkfs) {
    spdlog::info("no volume in {}: creating one", stack->store->describe());
    TIERFS_RETURN_IF_ERROR(statusOf(fs::Volume::create(*stack->store, {}, false)));
    volume = fs::Volume::open(*stack->store);
  }
  if (!volume) return failure(volume.error());
  stack->volume = std::move(*volume);
  const fs::VolumeRecord& record = stack->volume->record();
  cache::MemoryChunkCacheOptions cacheOptions = cfg.cache;
  cacheOptions.codec.codec = cfg.codec.value_or(record.codec);
  cacheOptions.codec.zstdLevel = cfg.zstdLevel.value_or(record.zstdLevel);
  cacheOptions.chunkBytes = record.chunkSize;
  cacheOptions.buffers = cache::makeChunkBufferPool(record.chunkSize);
  stack->buffers = cacheOptions.buffers;
  if (!cfg.devices.devices.empty()) {
    cache::DeviceTierOptions devices = cfg.devices;
    devices.regions.readBuffers = cacheOptions.buffers;  // a device hit is kept without a copy
    devices.owner = record.uuidString();
    // Tests only (docs/CACHE.md): faults injected into the cache devices, switched by a file.
    if (const char* faults = std::getenv("TIERFS_TEST_CACHE_FAULTS"); faults && *faults) {
      devices.faultFile = faults;
    }
    TIERFS_ASSIGN_OR_RETURN(stack->devices, cache::DeviceTier::open(std::move(devices)));
    cacheOptions.device = stack->devices.get();
  }
  stack->chunks = cache::makeMemoryChunkCache(*stack->store, cacheOptions);
  stack->cacheBytes = cfg.cache.capacityBytes + stack->chunks->stats().deviceCapacityBytes;
  fs::FsOptions fsOptions = cfg.fs;
  if (cfg.advisor.enabled) {
    cache::SizingAdvisorOptions advisor;
    advisor.shards = {cfg.advisor.sampleRate, cfg.advisor.maxSamples};
    advisor.tracePath = cfg.advisor.tracePath;
    TIERFS_ASSIGN_OR_RETURN(stack->advisor, cache::SizingAdvisor::open(std::move(advisor)));
    fsOptions.advisor = stack->advisor.get();
  }
  fsOptions.readAhead = fs::fitReadAheadToMemory(cfg.fs.readAhead, cfg.cache.capacityBytes);
  if (std::string note = readAheadClampNote(cfg); !note.empty()) spdlog::warn("{}", note);
  fsOptions.sweep.enabled = fsOptions.sweep.enabled && stack->devices != nullptr;
  // A file's unflushed bytes must hold at least two chunks, or a writer could wait forever.
  fsOptions.dirtyLimitPerFile =
      std::max<std::uint64_t>(fsOptions.dirtyLimitPerFile, 2 * std::uint64_t{record.chunkSize});
  stack->filesystem =
      std::make_unique<fs::Filesystem>(*stack->volume, *stack->chunks, fsOptions,
                                       stack->devices ? &stack->devices->listings() : nullptr);
  return stack;
}

}  // namespace tierfs::tools
