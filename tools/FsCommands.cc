#include "tools/FsCommands.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "cache/ChunkCache.h"
#include "common/Units.h"
#include "fs/Filesystem.h"
#include "fs/Fsck.h"
#include "fs/ReadAhead.h"
#include "fs/Volume.h"
#include "fs/fuse/FuseServer.h"
#include "tools/Allocator.h"
#include "tools/BackendOptions.h"
#include "tools/ControlService.h"
#include "tools/Logging.h"
#include "tools/Metrics.h"
#include "tools/MountConfig.h"
#include "tools/MountPoint.h"
#include "tools/SystemdNotify.h"

namespace tierfs::tools {
namespace {

// ---------------------------------------------------------------- mkfs

struct MkfsArgs {
  BackendOptions backend;
  std::string chunkSize = "4M";
  std::string compression = "zstd";
  int zstdLevel = 1;
  bool force = false;
  bool ifMissing = false;
};

int runMkfs(const MkfsArgs& args) {
  auto size = parseSize(args.chunkSize);
  if (!size) return failCommand("mkfs", size.error().withContext("--chunk-size"));
  auto config = args.backend.resolve();
  if (!config) return failCommand("mkfs", config.error());
  auto store = backends::openStore(*config);
  if (!store) return failCommand("mkfs", store.error());
  fs::VolumeOptions options;
  options.chunkSize = static_cast<std::uint32_t>(std::min<std::uint64_t>(*size, UINT32_MAX));
  options.codec = args.compression == "none" ? cache::Codec::kNone : cache::Codec::kZstd;
  options.zstdLevel = args.zstdLevel;
  if (args.ifMissing && !args.force) {
    auto existing = fs::Volume::open(**store);
    if (existing) {
      std::printf("volume %s exists in %s: left as it is\n",
                  (*existing)->record().uuidString().c_str(), (*store)->describe().c_str());
      return 0;
    }
    if (!existing.error().isNotFound()) return failCommand("mkfs", existing.error());
  }
  auto rec = fs::Volume::create(**store, options, args.force);
  if (!rec) return failCommand("mkfs", rec.error());
  std::printf("created volume %s in %s: chunk size %u, compression %s\n", rec->uuidString().c_str(),
              (*store)->describe().c_str(), rec->chunkSize, args.compression.c_str());
  return 0;
}

void addMkfs(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<MkfsArgs>();
  CLI::App* cmd = app.add_subcommand("mkfs", "create a tierfs volume in a back end");
  args->backend.addTo(*cmd);
  cmd->add_option("--chunk-size", args->chunkSize, "file data is cut into chunks of this size")
      ->capture_default_str();
  cmd->add_option("--compression", args->compression, "default codec of new chunks")
      ->check(CLI::IsMember({"zstd", "none"}))
      ->capture_default_str();
  cmd->add_option("--zstd-level", args->zstdLevel, "zstd level")->check(CLI::Range(-7, 22));
  cmd->add_flag("--force", args->force, "replace an existing volume (its files are lost)");
  cmd->add_flag("--if-missing", args->ifMissing, "do nothing (exit 0) if a volume exists");
  cmd->callback([args, &exitCode] { exitCode = runMkfs(*args); });
}

// ---------------------------------------------------------------- mount

// Forks; the parent waits until the child reports the mount is up (exit 0) or failed (exit 1,
// the child printed why). Returns the fd the child reports on.
int daemonize() {
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("tierfs mount: pipe");
    std::exit(1);
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("tierfs mount: fork");
    std::exit(1);
  }
  if (pid > 0) {
    close(fds[1]);
    char ok = 0;
    ssize_t n = read(fds[0], &ok, 1);
    std::_Exit(n == 1 && ok == 'k' ? 0 : 1);
  }
  close(fds[0]);
  setsid();
  return fds[1];
}

// Tells the waiting parent the mount is up and lets go of the terminal.
void detach(int reportFd, const std::string& logFile) {
  if (reportFd < 0) return;
  (void)!write(reportFd, "k", 1);
  close(reportFd);
  int null = open("/dev/null", O_RDWR);
  dup2(null, STDIN_FILENO);
  dup2(null, STDOUT_FILENO);
  if (logFile.empty()) dup2(null, STDERR_FILENO);
  if (null > STDERR_FILENO) close(null);
  (void)!chdir("/");
}

// Rename intents younger than this may belong to a daemon on another node that is still renaming.
constexpr std::chrono::seconds kMountIntentMinAge{60};

// Finishes or undoes the cross-directory renames a crashed daemon left half done. A failure is
// logged, not fatal: the intents stay for the next mount or `tierfs fsck --repair`.
void recoverRenames(fs::Volume& volume) {
  std::vector<fs::IntentOutcome> outcomes;
  Status s = fs::recoverRenameIntents(volume, kMountIntentMinAge, &outcomes);
  for (const auto& o : outcomes) {
    if (o.action == fs::IntentOutcome::Action::kRecent) {
      spdlog::info("rename intent {}: {}; younger than {} s, left for now", o.key, o.detail,
                   kMountIntentMinAge.count());
    } else if (o.applied) {
      spdlog::info("rename intent {}: {}: {}", o.key, fs::actionName(o.action), o.detail);
    } else {
      spdlog::warn("rename intent {}: {}: {} (run tierfs fsck)", o.key, fs::actionName(o.action),
                   o.detail);
    }
  }
  if (!s.isOk()) spdlog::warn("recovering rename intents: {}", s.toString());
}

// READY=1 once the mount answers, STOPPING=1 when the loop ends (see deploy/systemd).
fs::ServeHooks serviceManagerHooks(const std::string& uuid, const std::string& mountpoint,
                                   bool forked) {
  fs::ServeHooks hooks;
  hooks.answering = [=] {
    spdlog::info("the mount at {} answers: ready", mountpoint);
    notify::ready(fmt::format("serving volume {} at {}", uuid, mountpoint), forked);
  };
  hooks.stopping = [=](const std::string& why) {
    spdlog::info("stopping ({}): committing unflushed data, then unmounting {}", why, mountpoint);
    notify::stopping(fmt::format("stopping ({}): committing unflushed data", why));
  };
  return hooks;
}

// One stream's read-ahead window of librados receive buffers, faulted in before the first cold
// stream needs them (tools/Allocator.h): a window is what one stream keeps in flight, and more
// would only add to the daemon's memory for streams that may never run at once.
void warmHeapForReads(const DaemonConfig& cfg, const BufferPool& buffers) {
  const fs::ReadAheadOptions readAhead =
      fs::fitReadAheadToMemory(cfg.fs.readAhead, cfg.cache.capacityBytes);
  const std::size_t kept = warmHeap(readAhead.maxWindow, buffers.bufferBytes());
  if (kept > 0) spdlog::debug("faulted in {} MiB of heap for back-end reads", kept >> 20);
}

Status serveMount(const DaemonConfig& cfg, bool autoMkfs, int reportFd, const MountArgs& args) {
  notify::status("opening the volume");
  MetricsRecorders recorders;  // before the stack: its store records calls into it to the end
  TIERFS_ASSIGN_OR_RETURN(auto stack, openFilesystem(cfg, autoMkfs));
  warmHeapForReads(cfg, *stack->buffers);
  if (!cfg.fs.readOnly) recoverRenames(*stack->volume);
  // Declared after the stack: the socket closes (and its handlers end) before the stack goes.
  ControlService service(*stack, cfg.mount.mountpoint);
  TIERFS_ASSIGN_OR_RETURN(auto control, startControl(cfg, service));
  fs::FuseServer server(*stack->filesystem, cfg.mount);
  TIERFS_ASSIGN_OR_RETURN(auto metrics, startMetrics(cfg, *stack, service, server, recorders));
  TIERFS_RETURN_IF_ERROR(server.mount());
  const std::string uuid = stack->volume->record().uuidString();
  spdlog::info("mounted volume {} from {} at {}", uuid, stack->store->describe(),
               cfg.mount.mountpoint);
  detach(reportFd, args.logFile);
  Status s = server.serve(serviceManagerHooks(uuid, cfg.mount.mountpoint, reportFd >= 0));
  control.reset();
  spdlog::info("unmounted {}: {}", cfg.mount.mountpoint, s.toString());
  const cache::ChunkCacheStats c = stack->chunks->stats();
  spdlog::info(
      "cache: {} memory hits, {} device hits ({} MiB), {} back-end reads ({} MiB); devices: {} "
      "entries, {} of {} MiB used, {} regions evicted, {} corrupt entries, {} not admitted",
      c.memoryHits, c.deviceHits, c.bytesFromDevice >> 20, c.backendReads, c.bytesFromBackend >> 20,
      c.deviceEntries, c.deviceUsedBytes >> 20, c.deviceCapacityBytes >> 20, c.deviceEvictedRegions,
      c.deviceCorruptions, c.deviceNotAdmitted);
  if (stack->devices) {
    const cache::ListingCacheStats l = stack->devices->listings().stats();
    spdlog::info(
        "cache: directory listings: {} served, {} read from the back end, {} kept ({} KiB)", l.hits,
        l.misses, l.listings, l.bytes >> 10);
  }
  return s;
}

int runMount(MountArgs& args) {
  bool autoMkfs = false;
  // `tierfs mount CONFIG MOUNTPOINT`: the config file's [backend] counts as configured.
  if (args.positional.size() == 2) args.backend.setConfigFile(args.positional.front());
  if (args.backend.nothingConfigured()) {
    args.backend.defaultToDir(defaultStorePath());
    autoMkfs = true;
  }
  auto cfg = resolveDaemonConfig(args);
  if (!cfg) return failCommand("mount", cfg.error());
  const LoggingConfig& log = cfg->logging;
  if (Status s = setUpLogging(log.level, log.target, log.repeatWindow); !s.isOk()) {
    return failCommand("mount", s);
  }
  // After the logging set-up: removing a dead mount left by a crashed daemon is logged.
  if (Status s = prepareMountPoint(cfg->mount.mountpoint); !s.isOk())
    return failCommand("mount", s);
  const int reportFd = args.foreground ? -1 : daemonize();
  Status s = serveMount(*cfg, autoMkfs, reportFd, args);
  if (!s.isOk()) {
    spdlog::error("{}", s.toString());
    return failCommand("mount", s);
  }
  return 0;
}

void addMount(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<MountArgs>();
  CLI::App* cmd = app.add_subcommand(
      "mount", "mount a volume: tierfs mount [CONFIG] MOUNTPOINT (or back-end flags)");
  args->backend.addTo(*cmd);
  addMountFlags(*cmd, *args);
  cmd->callback([args, &exitCode] { exitCode = runMount(*args); });
}

}  // namespace

void addFsCommands(CLI::App& app, int& exitCode) {
  addMkfs(app, exitCode);
  addMount(app, exitCode);
}

}  // namespace tierfs::tools
